"""A test's server (a model, an MCP server) in a process of its own, on a free loopback port.

In the test's process it would share the GIL with the test's senders and pollers, and a test timing
the worker would time the harness too.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def serve(
    argv: Callable[[int], list[str]],
    env: dict[str, str] | None = None,
    path: str = "/v1",
    quiet: bool = False,
) -> Iterator[str]:
    """``argv(port)`` running until the block ends; yields ``http://127.0.0.1:PORT`` + ``path``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    stderr = subprocess.DEVNULL if quiet else None
    proc = subprocess.Popen(argv(port), cwd=ROOT, env=os.environ | (env or {}), stderr=stderr)
    try:
        deadline = time.monotonic() + 20
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)  # readiness poll of a child process
        else:
            raise AssertionError(f"{argv(port)} did not start")
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        proc.terminate()
        try:
            # uvicorn's graceful shutdown waits for open connections (the worker keeps its own), with no end:
            # a disposable test server has nothing to save, so it gets 2 s before the kill, not 10.
            proc.wait(2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def serve_module(module: str, env: dict[str, str] | None = None) -> contextlib.AbstractContextManager[str]:
    """``python -m module PORT``, an OpenAI-compatible model: its base URL (``.../v1``)."""
    return serve(lambda port: [sys.executable, "-m", module, str(port)], env)
