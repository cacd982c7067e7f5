"""Demo mode with nothing configured: SQLite (WAL) and a Redis the app starts itself, real processes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
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
    children: list[psutil.Process] = []
    try:
        wait_for(lambda: port_open("127.0.0.1", port), 90, "runall", proc)
        children = psutil.Process(proc.pid).children(recursive=True)
        names = " ".join(_cmdline(c) for c in children)
        assert "daphne" in names and "celery" in names and "redis-server" in names
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=60)
        assert f"http://127.0.0.1:{port}/" in output and "demo/demo" in output
        alive = [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
        assert alive == []
        assert not port_open("127.0.0.1", port)
    finally:
        _kill_tree(proc, children)


def _kill_tree(proc: subprocess.Popen[str], known: list[psutil.Process]) -> None:
    """After the test, however it ended: runall, its process group and every process under it. Some
    of its children run in process groups of their own (celery, daphne, redis-server), so killing
    runall's group alone left them running for ever when the test failed before its Ctrl-C.
    Descendants are listed while runall lives (once it is gone they belong to init and cannot be
    found from it); ``known`` adds the ones the test listed earlier, in case runall exited first."""
    found = {c.pid: c for c in known}
    if proc.poll() is None:  # not reaped yet: its number is still its own and its group's, not reused
        with contextlib.suppress(psutil.NoSuchProcess, psutil.ZombieProcess):
            found.update((c.pid, c) for c in psutil.Process(proc.pid).children(recursive=True))
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    for child in found.values():
        with contextlib.suppress(psutil.NoSuchProcess, psutil.ZombieProcess):
            child.kill()  # psutil checks the process is still the one listed (no reused number)
    # Not children of this process: they are reaped by whoever adopted them, or stay zombies (dead).
    deadline = time.monotonic() + 30
    while any(_running(c) for c in found.values()) and time.monotonic() < deadline:
        time.sleep(0.05)


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
