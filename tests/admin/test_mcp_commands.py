"""manage.py mcp_import / mcp_export / mcp_tools (issue 5)."""

from __future__ import annotations

import io
import json
import sys

import psutil
import pytest
from django.core.management import CommandError, call_command

from chatapp.models import McpServer, ToolPolicy

FILE = {
    "mcpServers": {
        "env_query": {
            "command": sys.executable,
            "args": ["-m", "demo.servers.env_query"],
            "env": {"API_TOKEN": "tok_literal_0123456789", "REGION": "env:CLEARLOOP_REGION"},
        },
        "Remote Tools": {
            "type": "http",
            "url": "https://mcp.example.com/mcp",
            "headers": {"Authorization": "Bearer abcdefghijklmnop"},
        },
        "old": {"url": "https://legacy.example.com/sse", "disabled": True},
    }
}


def run(*args, stdin: str | None = None) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        sys.stdin, saved = io.StringIO(stdin), sys.stdin
    try:
        call_command(*args, stdout=out, stderr=err)
    finally:
        if stdin is not None:
            sys.stdin = saved
    return out.getvalue(), err.getvalue()


def test_import_export_round_trip(db, tmp_path):
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps(FILE))
    out, _ = run("mcp_import", str(path))
    assert out.splitlines() == [
        "created env_query (stdio)",
        "created remote-tools (http)",
        "created old (sse)",
    ]
    assert McpServer.objects.get(name="old").enabled is False

    out, _ = run("mcp_import", str(path))
    assert out.splitlines() == [
        "unchanged env_query (stdio)",
        "unchanged remote-tools (http)",
        "unchanged old (sse)",
    ]

    out, _ = run("mcp_export", "--include-secrets")
    exported = json.loads(out)["mcpServers"]
    assert exported == {
        "env_query": FILE["mcpServers"]["env_query"],
        "old": {"type": "sse", "url": "https://legacy.example.com/sse", "disabled": True},
        "remote-tools": FILE["mcpServers"]["Remote Tools"],
    }

    # Exported and imported again (into an empty table): the same rows.
    before = list(
        McpServer.objects.order_by("name").values(
            "name", "transport", "command", "args", "env", "url", "headers", "enabled"
        )
    )
    McpServer.objects.all().delete()
    out, _ = run("mcp_import", "-", "--json", stdin=json.dumps({"mcpServers": exported}))
    assert {s["action"] for s in json.loads(out)["servers"]} == {"created"}
    after = list(
        McpServer.objects.order_by("name").values(
            "name", "transport", "command", "args", "env", "url", "headers", "enabled"
        )
    )
    assert after == before


def test_export_masks_literal_secrets_by_default(db, tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(FILE))
    run("mcp_import", str(path))
    out, err = run("mcp_export")
    assert "tok_literal" not in out and "abcdefghijklmnop" not in out
    servers = json.loads(out)["mcpServers"]
    assert servers["env_query"]["env"] == {"API_TOKEN": "env:API_TOKEN", "REGION": "env:CLEARLOOP_REGION"}
    assert servers["remote-tools"]["headers"] == {"Authorization": "env:REMOTE_TOOLS_AUTHORIZATION"}
    assert "env_query: env API_TOKEN -> env:API_TOKEN" in err
    assert "tok_literal" not in err


def test_import_reports_bad_files_clearly_and_imports_nothing(db, tmp_path):
    bad = tmp_path / "bad.json"
    cases = [
        ('{"mcpServers": {"a": {"command": "x"},', "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"mcpServers": {"ok": {"command": "x"}, "b": {"command": 3}}}', "b: command must be a string"),
        ('{"mcpServers": {"a": {"url": "ftp://x"}}}', "needs an http(s) url"),
    ]
    for content, error in cases:
        bad.write_text(content)
        with pytest.raises(CommandError) as info:
            run("mcp_import", str(bad))
        assert error in str(info.value) and "nothing was imported" in str(info.value)
    with pytest.raises(CommandError, match="cannot read"):
        run("mcp_import", str(tmp_path / "missing.json"))
    assert McpServer.objects.count() == 0


def test_mcp_tools_json_shows_a_working_and_a_broken_server(env_query_server, broken_server):
    ToolPolicy.objects.create(
        pattern="env_query__get_environment_status",
        tier="read_only",
        approval="never",
        description_override="Environment status by area code (admin's wording).",
    )
    McpServer.objects.create(name="off", command="/nonexistent", enabled=False)
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    out = io.StringIO()
    with pytest.raises(CommandError, match="not connected: broken"):
        call_command("mcp_tools", "--json", stdout=out)
    after = {p.pid for p in psutil.Process().children(recursive=True)}
    assert after <= before, "the pool must be closed at the end"

    servers = {s["server"]: s for s in json.loads(out.getvalue())["servers"]}
    assert set(servers) == {"env_query", "broken"}  # disabled servers are not probed
    good, bad = servers["env_query"], servers["broken"]
    assert good["status"] == "connected" and good["error"] is None
    assert good["protocol_version"]
    [tool] = good["tools"]
    assert tool["name"] == "env_query__get_environment_status"
    assert tool["description"] == "Environment status by area code (admin's wording)."
    assert tool["parameters"]["properties"]["area_code"]["type"] == "string"
    assert tool["parameters"]["required"] == ["area_code"]
    assert (tool["tier"], tool["needs_approval"], tool["offered"]) == ("read_only", False, True)
    assert bad["status"] == "error" and "could not start" in bad["error"]
    assert bad["tools"] == []


def test_mcp_tools_readable_listing_and_one_server(env_query_server, broken_server):
    out, _ = run("mcp_tools", "--server", "env_query")
    assert out.startswith("env_query (stdio): connected, protocol ")
    assert "  env_query__get_environment_status [high, needs approval; offered]" in out
    with pytest.raises(CommandError, match="no MCP server named nope"):
        run("mcp_tools", "--server", "nope")
