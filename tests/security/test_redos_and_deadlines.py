"""H1 (issue 16): a model-chosen regular expression cannot hold the worker; tools obey Stop and the timeout."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from agent.loop.execution import invoke
from agent.toolbox import ToolContext
from agent.tools import WorkspaceToolbox
from agent.tools.threads import Budget, BudgetExceeded, run_abandonable

EVIL = "(a+)+$"


async def test_catastrophic_pattern_is_linear_and_the_event_loop_keeps_ticking(tmp_path):
    # The reproduction: 31 a's and a '!' took Python's re 165 s (and it held the GIL throughout).
    lines = ["a" * n + "!" for n in range(20, 2000, 7)]
    (tmp_path / "evil.txt").write_text("\n".join(lines * 20))
    box = WorkspaceToolbox(tmp_path)
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.005)

    beat = asyncio.create_task(ticker())
    started = time.monotonic()
    out = await box.execute("search_files", {"pattern": EVIL, "target": "content"}, ToolContext("r", timeout=60))
    elapsed = time.monotonic() - started
    beat.cancel()
    assert out.ok and out.content["count"] == 0, out
    assert elapsed < 5, elapsed
    assert ticks >= 1  # the loop ran while the search did


async def test_backreferences_are_refused_with_a_clear_reason(tmp_path):
    out = await WorkspaceToolbox(tmp_path).execute(
        "search_files", {"pattern": r"(a)\1", "target": "content"}, ToolContext("r")
    )
    assert not out.ok and out.code == "invalid_arguments" and "RE2 syntax" in out.error


async def test_a_search_over_its_budget_stops_itself_and_says_so(tmp_path):
    for i in range(300):
        (tmp_path / f"f{i}.txt").write_text("hello\n" * 50)
    box = WorkspaceToolbox(tmp_path)
    out = await box.execute("search_files", {"pattern": "hello", "target": "content", "limit": 500},
                            ToolContext("r", timeout=0.0))
    assert out.ok and out.content["truncated"] is True and "stopped" in out.content["note"]


class _StubbornTool:
    """A tool whose thread loops until its budget tells it to stop (it never returns by itself)."""

    def __init__(self) -> None:
        self.started, self.noticed = threading.Event(), threading.Event()
        self.observed: list[str] = []

    def work(self, budget: Budget) -> str:
        self.started.set()
        while True:
            try:
                budget.check()
            except BudgetExceeded as exc:
                self.observed.append(str(exc))
                self.noticed.set()
                raise
            time.sleep(0.001)

    async def execute(self, name, arguments, ctx):
        await run_abandonable(self.work, budget=Budget.of(3600))


async def test_stop_and_timeout_abandon_a_thread_and_tell_it_to_stop():
    tool = _StubbornTool()
    t0 = time.monotonic()
    outcome = await invoke(tool, "stubborn", {}, ToolContext("r"), timeout=0.2)
    assert outcome.code == "timeout" and time.monotonic() - t0 < 1.0
    assert await asyncio.to_thread(tool.noticed.wait, 5)  # the abandoned thread was told, and stopped
    assert tool.observed == ["cancelled"]


async def test_stop_cancels_a_blocking_tool_at_once_and_tells_its_thread_to_stop():
    # Stop cancels the run's task (worker/driver.py _stopped_while): the await ends at once although
    # the tool's thread is still inside its loop, and the thread is told to stop.
    tool = _StubbornTool()
    call = asyncio.create_task(invoke(tool, "stubborn", {}, ToolContext("r"), timeout=3600))
    assert await asyncio.to_thread(tool.started.wait, 5)
    t0 = time.monotonic()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert time.monotonic() - t0 < 1.0
    assert await asyncio.to_thread(tool.noticed.wait, 5)
