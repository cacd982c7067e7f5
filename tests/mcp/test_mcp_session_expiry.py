"""A hosted Streamable HTTP server that ends its session: the next call re-opens it and runs once.

Spec 2025-11-25 ``basic/transports.mdx`` (Session Management): a 404 to a request carrying
``MCP-Session-Id`` means the session is gone and the request was not processed; the client MUST
start a new session. Driven through the real loop, against a real HTTP server in its own process.
"""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest
from mcp_helpers import HERE, free_port, wait_for_port

from agent.mcp import McpPool, McpServerConfig, McpToolbox
from tests.loop.loop_doubles import ScriptedProvider, call, drive, reply, result_body, tool_results

pytestmark = pytest.mark.live  # spawns MCP servers
SERVER = str(HERE / "servers" / "legacy_http_server.py")


@pytest.fixture(params=["ts", "bare"])
def expiring_server(request):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, SERVER, "--port", str(port), "--style", request.param],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for_port(port, proc)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)


def counting_model() -> ScriptedProvider:
    """Calls exp__count once, then answers with what the tool said (or the error it got)."""

    def respond(request):
        results = tool_results(request)
        if not results:
            return reply(calls=[call("c1", "exp__count", {})])
        message = results["c1"]
        return reply(text=message.content if message.is_error else json.dumps(result_body(message)))

    return ScriptedProvider(respond)


async def test_an_expired_session_is_reopened_and_the_call_runs_exactly_once(expiring_server):
    pool = McpPool()
    box = McpToolbox(pool, [McpServerConfig(name="exp", transport="http", url=f"{expiring_server}/mcp")])
    try:
        step, _, _ = await drive(counting_model(), box)
        assert json.loads(step.text) == {"count": 1}
        async with httpx.AsyncClient() as http:
            (await http.post(f"{expiring_server}/admin/expire")).raise_for_status()
            # The pooled session lives on into the next run, as it does in a worker.
            step, state, _ = await drive(counting_model(), box)
            stats = (await http.get(f"{expiring_server}/admin/stats")).json()
    finally:
        await pool.aclose()
    record = state.calls[(0, 0)]
    assert record.status == "succeeded", record.result
    assert json.loads(step.text) == {"count": 2}
    # One new initialize, and the tool body ran once per call: the 404'd request never ran.
    assert stats["opened"] == 2
    assert stats["ran"] == {"count": 2}


async def test_a_session_that_expires_again_at_once_fails_cleanly_not_as_unknown(expiring_server):
    pool = McpPool()
    box = McpToolbox(pool, [McpServerConfig(name="exp", transport="http", url=f"{expiring_server}/mcp")])
    try:
        await box.list_tools()
        async with httpx.AsyncClient() as http:
            # From now on the server forgets each session as soon as it is opened.
            (await http.post(f"{expiring_server}/admin/expire?always=1")).raise_for_status()
            step, state, _ = await drive(counting_model(), box)
            stats = (await http.get(f"{expiring_server}/admin/stats")).json()
    finally:
        await pool.aclose()
    record = state.calls[(0, 0)]
    assert record.status == "failed" and record.error_code == "execution_error", record.result
    assert "was not processed" in record.result and "re-opening it once" in record.result
    assert stats["ran"] == {}  # never ran, and was re-sent only once (two sessions in all)
    assert stats["opened"] == 2
