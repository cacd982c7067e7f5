"""No orphans: stdio children end with aclose(), and with the worker process on SIGTERM and SIGKILL."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from mcp_helpers import child_pids, raw_config

from agent.mcp import McpPool

pytestmark = pytest.mark.live  # spawns MCP servers and worker processes


def gone(pids, deadline=10.0) -> bool:
    """Wait (polling) until none of pids is alive; zombies count as gone."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        alive = [
            p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
        ]
        if not alive:
            return True
        time.sleep(0.05)
    return False


async def test_aclose_ends_every_child():
    before = child_pids()
    pool = McpPool([raw_config("a"), raw_config("b"), raw_config("c")])
    for name in "abc":
        await pool.catalogue(name)
    children = child_pids() - before
    assert len(children) == 6  # each server runs behind its stdout-capping launcher (stdio_guard.py)
    await pool.aclose()
    assert gone(children, 5)
    with pytest.raises(RuntimeError):
        await pool.catalogue("a")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_children_die_with_their_worker(sig):
    holder = subprocess.Popen(
        [sys.executable, str(Path(__file__).parent / "holder.py")], stdout=subprocess.PIPE, text=True
    )
    try:
        pids = json.loads(holder.stdout.readline())
        # Two servers, each behind its launcher: all four must die with the worker.
        assert len(pids) == 4 and all(psutil.pid_exists(p) for p in pids)
        holder.send_signal(sig)
        holder.wait(10)
        assert gone(pids), f"children {pids} outlived the worker after {sig.name}"
    finally:
        if holder.poll() is None:
            holder.kill()
