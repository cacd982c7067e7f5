"""Issue 16 item 7 (review I2): under `make run` a dead worker, daphne, demo MCP server or embedded
Redis is started again with a line on the console, instead of the whole stack stopping."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from chatapp.devstack import port_open, wait_for
from tests.integration.embedded import ROOT, manage
from tests.integration.stack import free_port

pytestmark = pytest.mark.timeout(400)

CHILDREN = [  # (name on the console, what its command line contains)
    ("worker", "celery"),
    ("web", "daphne"),
    ("demo-mcp-http", "geo_simulator"),
    ("redis", "redis-server"),
]


def child(proc: subprocess.Popen, marker: str) -> psutil.Process | None:
    for c in psutil.Process(proc.pid).children():
        try:
            if marker in " ".join(c.cmdline()) and c.status() != psutil.STATUS_ZOMBIE:
                return c
        except psutil.NoSuchProcess:
            continue
    return None


def test_runall_restarts_each_child_that_dies_and_keeps_answering(seeded, tmp_path):
    # Its own demo MCP port: the default one may be served by another stack on this machine.
    env = {**seeded, "PYTHONUNBUFFERED": "1", "CLEARLOOP_DEMO_MCP_PORT": str(free_port())}
    console = tmp_path / "console.txt"
    with console.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "runall", "--concurrency", "2"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    worker_log = tmp_path / "data" / "logs" / "worker.log"
    try:
        wait_for(lambda: "clearloop is up" in console.read_text(), 120, "runall", proc)
        for name, marker in CHILDREN:
            before = child(proc, marker)
            assert before is not None, f"no {name} child"
            readies = worker_log.read_text(errors="replace").count(" ready.")
            os.killpg(before.pid, signal.SIGKILL)
            wait_for(lambda n=name: f"{n} exited" in console.read_text(), 30, f"the console line for {name}")
            wait_for(
                lambda m=marker, b=before.pid: (c := child(proc, m)) is not None and c.pid != b,
                30,
                f"{name} started again",
            )
            if name == "worker":
                wait_for(
                    lambda r=readies: worker_log.read_text(errors="replace").count(" ready.") > r,
                    60,
                    "worker",
                )
            assert proc.poll() is None, console.read_text()
        wait_for(lambda: port_open("127.0.0.1", int(seeded["PORT"])), 60, "daphne listening again")
        # After every child was replaced once, a message still goes all the way through.
        deadline = time.monotonic() + 90
        while True:
            result = manage(env, "chat", "--user", "demo", "--message", "still there?", "--json", timeout=120)
            if result.returncode == 0 or time.monotonic() > deadline:
                break
        assert "No Celery worker is running" not in result.stderr, "the restarted worker did not answer"
        assert result.returncode == 0, result.stderr[-2000:]
        assert json.loads(result.stdout)["status"] == "succeeded"
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
    text = console.read_text()
    for name, _ in CHILDREN:
        assert f"{name} exited (code -9); started it again" in text
