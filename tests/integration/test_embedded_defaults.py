"""Demo mode with nothing configured: SQLite (WAL) and a Redis the app starts itself, real processes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import psutil

from chatapp.devstack import port_open, wait_for
from tests.integration.embedded import ROOT, manage


def test_chat_command_runs_through_sqlite_and_a_self_started_redis(seeded):
    result = manage(seeded, "chat", "--user", "demo", "--message", "hi", "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout)
    assert out["status"] == "succeeded" and "hi" in out["text"]
    assert out["deltas"] >= 3 and out["run_id"] and out["conversation_id"]
    assert {"rounds", "tool_calls", "events"} <= set(out["trace"])
    database = Path(seeded["CLEARLOOP_DATA_DIR"]) / "clearloop.sqlite3"
    assert sqlite3.connect(database).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    # the stack the command started for itself is gone again
    assert not port_open("127.0.0.1", int(seeded["CLEARLOOP_EMBEDDED_REDIS_PORT"]))


def test_chat_command_exits_non_zero_when_the_run_fails(seeded):
    # The demo provider's row follows the environment when the run starts (ensure_env_providers).
    env = {**seeded, "DEMO_MODEL_URL": "http://127.0.0.1:9/v1"}
    result = manage(env, "chat", "--user", "demo", "--message", "hi", "--json")
    assert result.returncode == 1
    assert json.loads(result.stdout)["status"] == "failed"


def _cmdline(process: psutil.Process) -> str:
    # A short-lived child runall has not reaped yet (a zombie) has no command line left (CI, session 14).
    try:
        return " ".join(process.cmdline())
    except (psutil.ZombieProcess, psutil.NoSuchProcess):
        return ""


def test_runall_serves_the_app_and_ctrl_c_leaves_no_orphans(seeded):
    port = int(seeded["PORT"])
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "runall", "--concurrency", "2"],
        cwd=ROOT,
        env=seeded,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        wait_for(lambda: port_open("127.0.0.1", port), 90, "runall", proc)
        children = psutil.Process(proc.pid).children(recursive=True)
        names = " ".join(_cmdline(c) for c in children)
        assert "daphne" in names and "celery" in names and "redis-server" in names
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert f"http://127.0.0.1:{port}/" in output and "demo/demo" in output
    alive = [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    assert alive == []
    assert not port_open("127.0.0.1", port)
