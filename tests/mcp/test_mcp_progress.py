"""Progress notifications push a call's deadline back, up to a hard maximum, and reach the sink.

Spec 2025-11-25 ``basic/lifecycle.mdx`` (Timeouts) and ``basic/utilities/progress.mdx``. Driven
through the real loop against a real MCP server (``servers/hosted_features_server.py``, stdio).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from mcp_helpers import HERE, free_port, wait_for_port

from agent.events import ToolProgress
from agent.loop import LoopSettings
from agent.mcp import McpPool, McpServerConfig, McpToolbox
from tests.loop.loop_doubles import ScriptedProvider, call, drive, reply, tool_results

pytestmark = pytest.mark.live  # spawns MCP servers
SERVER = str(HERE / "servers" / "hosted_features_server.py")


@pytest.fixture(params=["stdio", "http"])
async def hosted_box(request, tmp_path):
    """The server over stdio, or over Streamable HTTP (progress then rides the call's SSE stream)."""
    runs = tmp_path / "runs.txt"
    pool = McpPool()
    proc = None
    if request.param == "stdio":
        config = McpServerConfig(
            name="hosted", command=sys.executable, args=(SERVER,), env={"HOSTED_RUNS": str(runs)}
        )
    else:
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, SERVER, "--http", "--port", str(port)],
            env={**os.environ, "HOSTED_RUNS": str(runs)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(port, proc)
        config = McpServerConfig(name="hosted", transport="http", url=f"http://127.0.0.1:{port}/mcp")
    box = McpToolbox(pool, [config])
    await box.list_tools()  # the server is started before the clock of any test call runs
    yield box, runs
    await pool.aclose()
    if proc is not None:
        proc.terminate()
        proc.wait(10)


def one_call(name: str, args: dict) -> ScriptedProvider:
    def respond(request):
        results = tool_results(request)
        if not results:
            return reply(calls=[call("c1", name, args)])
        return reply(text="done")

    return ScriptedProvider(respond)


async def test_progress_keeps_a_long_call_alive_and_is_published(hosted_box):
    box, _ = hosted_box
    settings = LoopSettings(tool_timeout=1.0, tool_timeout_max=30.0, progress_interval=0.0)
    # 8 steps of 0.4 s: 3.2 s in all, far past the 1 s allowed without a sign of life.
    _, state, sink = await drive(
        one_call("hosted__index", {"steps": 8, "delay": 0.4}), box, settings=settings
    )
    record = state.calls[(0, 0)]
    assert record.status == "succeeded", record.result
    assert json.loads(record.result.split("\n", 1)[1]) == {"indexed": 8}
    progress = sink.of_type(ToolProgress)
    assert [p.progress for p in progress] == [float(i) for i in range(1, 9)]
    assert {(p.total, p.message, p.call_id, p.name) for p in progress} == {
        (8.0, "indexing", "c1", "hosted__index")
    }


async def test_a_silent_call_still_times_out_after_the_idle_timeout(hosted_box):
    box, runs = hosted_box
    settings = LoopSettings(tool_timeout=1.0, tool_timeout_max=30.0)
    _, state, sink = await drive(one_call("hosted__silent", {"seconds": 5}), box, settings=settings)
    record = state.calls[(0, 0)]
    assert record.status == "failed" and record.error_code == "timeout", record.result
    assert "within 1 s" in record.result
    assert not sink.of_type(ToolProgress)


async def test_progress_cannot_extend_a_call_past_the_hard_maximum(hosted_box):
    box, _ = hosted_box
    settings = LoopSettings(tool_timeout=1.0, tool_timeout_max=2.0, progress_interval=0.0)
    _, state, sink = await drive(
        one_call("hosted__index", {"steps": 20, "delay": 0.3}), box, settings=settings
    )
    record = state.calls[(0, 0)]
    assert record.status == "failed" and record.error_code == "timeout", record.result
    assert "last progress report (at most 2 s in all)" in record.result
    assert 3 <= len(sink.of_type(ToolProgress)) < 20


async def test_progress_events_are_throttled_per_call(hosted_box):
    box, _ = hosted_box
    settings = LoopSettings(tool_timeout=5.0, progress_interval=10.0)
    _, state, sink = await drive(
        one_call("hosted__index", {"steps": 6, "delay": 0.05}), box, settings=settings
    )
    assert state.calls[(0, 0)].status == "succeeded"
    # The first report and the last (progress == total) pass; the ones between are dropped.
    assert [p.progress for p in sink.of_type(ToolProgress)] == [1.0, 6.0]
