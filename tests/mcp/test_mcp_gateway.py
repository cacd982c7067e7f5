"""Gateway mode: one mcp_call_tool for the gateway servers, arguments checked against the real schema."""

import pytest
import pytest_asyncio
from mcp_helpers import raw_config

from agent.mcp import GATEWAY_TOOL, McpPool, McpToolbox
from agent.toolbox import ToolContext

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.live]  # spawns MCP servers
CTX = ToolContext(run_key="gw")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def box():
    pool = McpPool()
    configs = [
        raw_config("gw1", gateway=True),
        raw_config("gw2", "broken_schema", gateway=True),
        raw_config("direct"),
    ]
    yield McpToolbox(pool, configs)
    await pool.aclose()


async def test_one_gateway_tool_with_guide(box):
    tools = {t.spec.name: t for t in await box.list_tools()}
    assert GATEWAY_TOOL in tools and "direct__echo" in tools
    assert not any(n.startswith(("gw1__", "gw2__")) for n in tools)
    spec = tools[GATEWAY_TOOL].spec
    assert spec.parameters["properties"]["server"]["enum"] == ["gw1", "gw2"]
    assert "echo(text: string)" in spec.description and "Server 'gw2'" in spec.description
    assert "broken(" not in spec.description
    assert tools[GATEWAY_TOOL].risk == "high"


async def test_gateway_call_and_validation(box):
    ok = await box.execute(GATEWAY_TOOL, {"server": "gw1", "tool": "echo", "arguments": {"text": "hi"}}, CTX)
    assert ok.ok and ok.content == "hi"
    missing = await box.execute(GATEWAY_TOOL, {"server": "gw1", "tool": "echo", "arguments": {}}, CTX)
    assert missing.code == "invalid_arguments" and "'text' is a required property" in missing.error
    wrong_type = await box.execute(
        GATEWAY_TOOL, {"server": "gw1", "tool": "echo", "arguments": {"text": 5}}, CTX
    )
    assert wrong_type.code == "invalid_arguments"
    unknown = await box.execute(GATEWAY_TOOL, {"server": "gw1", "tool": "nope", "arguments": {}}, CTX)
    assert unknown.code == "invalid_arguments"
    not_gateway = await box.execute(
        GATEWAY_TOOL, {"server": "direct", "tool": "echo", "arguments": {"text": "x"}}, CTX
    )
    assert not_gateway.code == "invalid_arguments"
    broken = await box.execute(GATEWAY_TOOL, {"server": "gw2", "tool": "broken", "arguments": {}}, CTX)
    assert broken.code == "invalid_arguments" and "not a valid JSON Schema" in broken.error
