"""The demo servers over real stdio subprocesses, Streamable HTTP and legacy SSE, through the pool."""

import asyncio
import json

import pytest
import pytest_asyncio
from mcp_helpers import child_pids, demo_config

from agent.mcp import McpPool, McpServerConfig, McpToolbox
from agent.toolbox import ToolContext

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.live]  # spawns MCP servers
CTX = ToolContext(run_key="r1")


@pytest.fixture(scope="module")
def outbox(tmp_path_factory):
    return tmp_path_factory.mktemp("outbox") / "outbox.jsonl"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stdio_box(outbox):
    pool = McpPool()
    configs = [
        demo_config("env", "env_query"),
        demo_config("geo", "geo_simulator"),
        demo_config("demo", "demo_tools", env={"CLEARLOOP_OUTBOX": str(outbox)}),
    ]
    box = McpToolbox(pool, configs)
    yield box
    await pool.aclose()


async def test_tools_are_namespaced_high_risk_with_hints(stdio_box):
    tools = {t.spec.name: t for t in await stdio_box.list_tools()}
    assert set(tools) == {
        "env__get_environment_status",
        "geo__simulate_geolocation",
        "demo__get_stock_price",
        "demo__send_message",
    }
    send = tools["demo__send_message"]
    assert send.risk == "high" and send.server == "demo" and send.remote_name == "send_message"
    assert send.hints["destructiveHint"] is True
    assert len(send.definition_hash) == 64
    assert set(send.spec.to_dict()) == {"name", "description", "parameters"}
    assert send.spec.parameters["required"] == ["phone_number", "content"]


async def test_env_and_geo_calls(stdio_box):
    env = await stdio_box.execute("env__get_environment_status", {"area_code": "A1001"}, CTX)
    assert env.ok and env.content["area_code"] == "A1001" and 0 < env.content["aqi"] <= 500
    again = await stdio_box.execute("env__get_environment_status", {"area_code": "A1001"}, CTX)
    assert again.content == env.content  # deterministic
    geo = await stdio_box.execute("geo__simulate_geolocation", {"lat": 39.9, "lng": 116.4}, CTX)
    assert geo.ok and abs(geo.content["lat"] - 39.9) < 0.01


async def test_out_of_range_coordinates_are_a_tool_error(stdio_box):
    out = await stdio_box.execute("geo__simulate_geolocation", {"lat": 999, "lng": 999}, CTX)
    assert not out.ok and out.code == "execution_error"
    assert "lat 999" in out.error and "outside -90..90" in out.error


async def test_send_message_has_exactly_one_side_effect(stdio_box, outbox):
    out = await stdio_box.execute(
        "demo__send_message", {"phone_number": "13800138000", "content": "你好"}, CTX
    )
    assert out.ok and out.content["status"] == "sent"
    lines = [json.loads(x) for x in outbox.read_text().splitlines()]
    assert len(lines) == 1 and lines[0]["content"] == "你好"


async def test_concurrent_calls_share_one_session(stdio_box):
    # Self-contained (not relying on an earlier test's session): warm the session, then twelve calls
    # at once must all run on that same client, with no second server started.
    pool = stdio_box.pool
    assert (await stdio_box.execute("demo__get_stock_price", {"symbol": "AAPL"}, CTX)).ok
    status = await pool.status("demo")
    assert status["state"] == "ready", status
    session = pool._conns["demo"].client
    servers = child_pids()
    results = await asyncio.gather(
        *(
            stdio_box.execute("demo__get_stock_price", {"symbol": s}, CTX)
            for s in ["AAPL", "MSFT", "600519"] * 4
        )
    )
    assert all(r.ok for r in results)
    assert results[2].content["currency"] == "CNY"
    assert pool._conns["demo"].client is session and child_pids() == servers


async def test_resources_and_prompts(stdio_box):
    pool = stdio_box.pool
    resources = await pool.list_resources("demo")
    assert [r.uri for r in resources] == ["demo://watchlist"]
    read = await pool.read_resource("demo", "demo://quotes/msft")
    assert json.loads(read.contents[0].text)["symbol"] == "MSFT"
    prompts = await pool.list_prompts("demo")
    assert prompts[0].name == "market_briefing"
    got = await pool.get_prompt("demo", "market_briefing", {"symbols": "AAPL, MSFT"})
    assert "AAPL, MSFT" in got.messages[0].content.text


async def test_status_reports_era_and_server(stdio_box):
    status = await stdio_box.pool.status("env")
    assert status["state"] == "ready" and status["protocol_version"] == "2026-07-28"
    assert status["server_info"]["name"] == "env_query"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def http_pool(http_demo_server):
    pool = McpPool(
        [
            McpServerConfig(
                name="web", transport="http", url=http_demo_server["http"], headers={"X-Test": "1"}
            ),
            McpServerConfig(name="legacy", transport="sse", url=http_demo_server["sse"]),
        ]
    )
    yield pool
    await pool.aclose()


async def test_streamable_http_and_sse_calls(http_pool, http_demo_server):
    box = McpToolbox(http_pool, ["web", "legacy"])
    names = {t.spec.name for t in await box.list_tools()}
    assert {"web__get_stock_price", "legacy__get_stock_price"} <= names
    for name in ("web__get_stock_price", "legacy__get_stock_price"):
        out = await box.execute(name, {"symbol": "AAPL"}, CTX)
        assert out.ok and out.content["symbol"] == "AAPL"
    sent = await box.execute("web__send_message", {"phone_number": "13900139000", "content": "hi"}, CTX)
    assert sent.ok
    assert len(http_demo_server["outbox"].read_text().splitlines()) == 1
    assert (await http_pool.status("web"))["protocol_version"] == "2026-07-28"
    assert (await http_pool.status("legacy"))["state"] == "ready"
