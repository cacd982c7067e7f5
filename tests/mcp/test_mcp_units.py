"""Pure pieces: mcpServers JSON, config checks, catalogue naming/hashing/schema checks, result mapping."""

import pytest
from mcp.types import CallToolResult, ImageContent, TextContent

from agent.mcp import McpConfigError, McpServerConfig, dump_mcp_servers, map_call_result, parse_mcp_servers
from agent.mcp.catalogue import definition_hash, exposed_name, schema_problem
from agent.mcp.results import cap_text

CLAUDE = {
    "mcpServers": {
        "Env Query": {"command": "python", "args": ["-m", "demo.servers.env_query"], "env": {"K": "v"}},
        "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t"}},
        "old": {"url": "https://example.com/sse"},
        "typed": {"type": "streamable-http", "url": "https://example.com/x"},
    }
}


def test_parse_and_dump_round_trip():
    configs = {c.name: c for c in parse_mcp_servers(CLAUDE)}
    assert configs["env-query"].transport == "stdio" and configs["env-query"].args == (
        "-m",
        "demo.servers.env_query",
    )
    assert configs["remote"].transport == "http" and configs["remote"].headers["Authorization"] == "Bearer t"
    assert configs["old"].transport == "sse" and configs["typed"].transport == "http"
    again = parse_mcp_servers(dump_mcp_servers(configs.values()))
    assert {c.name: c for c in again} == configs


@pytest.mark.parametrize(
    "doc",
    [
        '{"mcpServers": []}',
        "not json",
        '{"mcpServers": {"x": {"args": []}}}',
        '{"mcpServers": {"x": {"command": 1}}}',
    ],
)
def test_parse_rejects_malformed(doc):
    with pytest.raises(McpConfigError):
        parse_mcp_servers(doc)


def test_config_validation():
    with pytest.raises(McpConfigError):
        McpServerConfig(name="Bad Name", command="x")
    with pytest.raises(McpConfigError):
        McpServerConfig(name="a__b", command="x")
    with pytest.raises(McpConfigError):
        McpServerConfig(name="web", transport="http", url="ftp://x")
    assert McpServerConfig(name="ok", command="x", args=["a"]).args == ("a",)


def test_exposed_names_are_model_safe_and_distinct():
    assert exposed_name("demo", "send_message") == "demo__send_message"
    dotted = exposed_name("git", "git.status")
    assert dotted.startswith("git__git_status_") and len(dotted) <= 64
    long = exposed_name("srv", "x" * 120)
    assert len(long) == 64 and long != exposed_name("srv", "x" * 121)


def test_definition_hash_changes_with_definition():
    base = definition_hash("t", "d", {"type": "object"})
    assert base == definition_hash("t", "d", {"type": "object"})
    assert base != definition_hash("t", "d2", {"type": "object"})
    assert base != definition_hash("t", "d", {"type": "object", "properties": {"a": {"type": "string"}}})


def test_schema_problems():
    assert schema_problem({"type": "object", "properties": {"a": {"type": "string"}}}) is None
    assert "type 'object'" in schema_problem({"type": "string"})
    assert "not a valid JSON Schema" in schema_problem(
        {"type": "object", "properties": {"a": {"type": "strng"}}}
    )


def test_result_mapping():
    structured = CallToolResult(content=[TextContent(text='{"a": 1}')], structured_content={"a": 1})
    assert map_call_result(structured).content == {"a": 1}
    json_text = CallToolResult(content=[TextContent(text='{"rows": [1, 2], "count": 2}')])
    assert map_call_result(json_text).content == {"rows": [1, 2], "count": 2}  # parsed, not double-escaped
    image = CallToolResult(content=[ImageContent(data="AAAA", mime_type="image/png")])
    mapped = map_call_result(image)
    assert mapped.content == "[image: image/png, 3 bytes]"
    assert [(m.kind, m.mime_type, m.data) for m in mapped.media] == [("image", "image/png", "AAAA")]
    broken = CallToolResult(content=[ImageContent(data="not base64!", mime_type="image/png")])
    assert "not valid base64" in map_call_result(broken).content and not map_call_result(broken).media
    err = CallToolResult(content=[TextContent(text="nope")], is_error=True)
    out = map_call_result(err)
    assert not out.ok and out.code == "execution_error" and out.error == "nope"


def test_cap_text_keeps_head_and_tail():
    text = "H" * 10_000 + "T" * 10_000
    capped, cut = cap_text(text, 1000)
    assert cut and len(capped) <= 1000 and capped.startswith("H") and capped.endswith("T")
    assert "of 20000 characters" in capped
