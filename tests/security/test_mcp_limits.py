"""L7 (issue 16): an MCP server's messages and stderr are bounded; a 40 MB result is refused quickly."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from agent.mcp import McpPool, McpServerConfig
from agent.mcp.errors import McpError
from agent.mcp.stdio_guard import LOG_BACKUPS, LOG_MAX_BYTES, MAX_MESSAGE_BYTES

HOSTILE = str(Path(__file__).parent / "servers" / "hostile_mcp.py")
pytestmark = pytest.mark.live  # spawns MCP servers


def hostile(**kw) -> McpServerConfig:
    return McpServerConfig(name="hostile", command=sys.executable, args=(HOSTILE,), **kw)


async def test_an_oversized_result_is_dropped_with_an_error_and_the_server_stays_usable(tmp_path):
    async with McpPool([hostile()], log_dir=tmp_path) as pool:
        started = time.monotonic()
        with pytest.raises(McpError, match=f"over {MAX_MESSAGE_BYTES} bytes"):
            await pool.call_tool("hostile", "flood", {"mb": 40}, timeout=60)
        assert time.monotonic() - started < 20  # was: the 60 s timeout, then ~100 s more of reading
        small = await pool.call_tool("hostile", "flood", {"mb": 1}, timeout=60)
        assert not small.is_error


async def test_stderr_is_kept_in_a_rotated_log_of_bounded_size(tmp_path):
    async with McpPool([hostile()], log_dir=tmp_path) as pool:
        await pool.call_tool("hostile", "stderr_flood", {"mb": 30}, timeout=60)
    logs = list(tmp_path.glob("hostile.stderr.log*"))
    total = sum(p.stat().st_size for p in logs)
    assert len(logs) == LOG_BACKUPS + 1 and total <= (LOG_BACKUPS + 1) * (LOG_MAX_BYTES + 64 * 1024)


async def test_over_http_an_oversized_result_is_refused_and_the_session_goes_on(tmp_path):
    import socket
    import subprocess

    from chatapp.devstack import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, HOSTILE, "--http", str(port)], stderr=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)  # readiness poll of the child server
        config = McpServerConfig(name="h", transport="http", url=f"http://127.0.0.1:{port}/mcp")
        async with McpPool([config], log_dir=tmp_path) as pool:
            started = time.monotonic()
            with pytest.raises(McpError, match=f"over {MAX_MESSAGE_BYTES} bytes"):
                await pool.call_tool("h", "flood", {"mb": 40}, timeout=60)
            assert time.monotonic() - started < 30
            assert not (await pool.call_tool("h", "flood", {"mb": 2}, timeout=60)).is_error
    finally:
        proc.kill()
        proc.wait(10)
