"""Third-party servers over stdio: mcp-server-time (PyPI, dual-era) and server-memory (npm, legacy)."""

import shutil
import sys

import pytest
import pytest_asyncio
from mcp_helpers import NODE_DIR

from agent.mcp import McpPool, McpServerConfig, McpToolbox
from agent.toolbox import ToolContext
from tests.npm_ci import npm_ci

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.live]  # spawns MCP servers
CTX = ToolContext(run_key="ref")
MEMORY_JS = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"


@pytest.fixture(scope="module")
def memory_server():
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("npm/node are not installed: cannot run the npm reference server")
    npm_ci(NODE_DIR, MEMORY_JS.exists, timeout=300)
    return MEMORY_JS


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def box(memory_server, tmp_path_factory):
    memory_file = tmp_path_factory.mktemp("memory") / "memory.jsonl"
    pool = McpPool()
    configs = [
        McpServerConfig(
            name="time", command=sys.executable, args=("-m", "mcp_server_time", "--local-timezone", "UTC")
        ),
        McpServerConfig(
            name="memory",
            command=shutil.which("node"),
            args=(str(memory_server),),
            env={"MEMORY_FILE_PATH": str(memory_file)},
        ),
    ]
    yield McpToolbox(pool, configs)
    await pool.aclose()


async def test_mcp_server_time(box):
    tools = {t.spec.name: t for t in await box.list_tools()}
    assert "time__get_current_time" in tools and "time__convert_time" in tools
    assert tools["time__get_current_time"].hints.get("readOnlyHint") is True
    out = await box.execute("time__get_current_time", {"timezone": "UTC"}, CTX)
    assert out.ok and out.content["timezone"] == "UTC"
    bad = await box.execute("time__get_current_time", {"timezone": "Mars/Olympus"}, CTX)
    assert bad.code == "execution_error"
    assert (await box.pool.status("time"))["protocol_version"] == "2026-07-28"


async def test_npm_server_memory_legacy_era(box):
    tools = {t.spec.name for t in await box.list_tools()}
    assert {"memory__create_entities", "memory__read_graph"} <= tools
    created = await box.execute(
        "memory__create_entities",
        {"entities": [{"name": "clearloop", "entityType": "project", "observations": ["uses MCP"]}]},
        CTX,
    )
    assert created.ok, created
    graph = await box.execute("memory__read_graph", {}, CTX)
    assert graph.ok and "clearloop" in str(graph.content)
    assert (await box.pool.status("memory"))["protocol_version"] == "2025-11-25"
