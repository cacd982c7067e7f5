import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from agent.mcp import McpServerConfig

HERE = Path(__file__).parent
RAW = str(HERE / "servers" / "raw_server.py")
NODE_DIR = HERE / "node"


def raw_config(name: str, *modes: str, env: dict | None = None, **kw) -> McpServerConfig:
    return McpServerConfig(name=name, command=sys.executable, args=(RAW, *modes), env=env or {}, **kw)


def demo_config(name: str, module: str, env: dict | None = None, **kw) -> McpServerConfig:
    return McpServerConfig(
        name=name, command=sys.executable, args=("-m", f"demo.servers.{module}"), env=env or {}, **kw
    )


def child_pids() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def free_port() -> int:
    # devstack's: never the same port twice in one process (the kernel offers a probed port again).
    from chatapp.devstack import free_port as once_per_process

    return once_per_process()


def wait_for_port(port: int, proc: subprocess.Popen, deadline: float = 20.0) -> None:
    """Poll until the server accepts connections (a readiness condition, not a fixed sleep)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"port {port} never opened")


@pytest.fixture(scope="module")
def http_demo_server(tmp_path_factory):
    """demo_tools over Streamable HTTP (and a second process over SSE) on loopback."""
    outbox = tmp_path_factory.mktemp("http") / "outbox.jsonl"
    procs, urls = [], {}
    for flag, path in (("--http", "/mcp"), ("--sse", "/sse")):
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "demo.servers.demo_tools", flag, "--port", str(port)],
            env={"CLEARLOOP_OUTBOX": str(outbox), "PATH": "/usr/bin:/bin"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs.append((proc, port))
        urls[flag] = f"http://127.0.0.1:{port}{path}"
    for proc, port in procs:
        wait_for_port(port, proc)
    yield {"http": urls["--http"], "sse": urls["--sse"], "outbox": outbox}
    for proc, _ in procs:
        proc.terminate()
        proc.wait(10)
