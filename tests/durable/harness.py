"""A private live stack for the durability tests: a ``devstack.Stack`` with its own redis-server and
daphne, and a worker the tests kill.

Each session gets one stack (``durable_stack``). Only the Celery worker is stopped, killed and
started again, with whatever environment a case needs (``CLEARLOOP_CRASH_AT=...``). Redis is the
stack's private ``redis-server`` on a free port (``Stack.redis_port``), so a short visibility timeout
here never redelivers another session's tasks and the reconnect tests may kill and restart it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chatapp.devstack import Stack, StackError, _signal_group, wait_for

TERMINAL = ("succeeded", "failed", "cancelled", "denied")


@dataclass
class DurableStack:
    """daphne (web + demo model) and a private Redis as a Stack, plus a worker started and killed at will."""

    stack: Stack
    data_dir: Path
    queue: str
    base_url: str
    demo_url: str
    worker_name: str = ""
    worker_env: dict[str, str] = field(default_factory=dict)
    starts: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def worker(self) -> subprocess.Popen | None:
        return self.stack.procs.get("worker")

    def ensure_worker(self, **env: str) -> subprocess.Popen:
        """A running worker started with exactly ``env`` (reused across tests: a boot costs seconds)."""
        proc = self.worker
        if proc is not None and proc.poll() is None and self.worker_env == env and self.worker_answers():
            return proc
        return self.start_worker(**env)

    def start_worker(self, concurrency: int = 8, **env: str) -> subprocess.Popen:
        """Start a new worker process with the stack's environment plus ``env``; wait until it answers."""
        self.stop_worker()
        self.starts += 1
        self.worker_env = dict(env)
        self.worker_name = f"durable-{uuid.uuid4().hex[:8]}@durable"
        proc = self.stack.start_worker("worker", concurrency, node=self.worker_name, env=env)
        wait_for(self.worker_answers, 60, "the Celery worker", proc)
        return proc

    def web_answers(self) -> bool:
        """daphne (which also serves the demo model) answers its health check."""
        import httpx

        try:
            return httpx.get(f"{self.base_url}/healthz", timeout=2).status_code < 500
        except httpx.HTTPError:
            return False

    def heal(self, timeout: float = 60) -> None:
        """Redis and daphne up and answering, as a test that killed things at random must leave them.

        A process killed in the last moments of such a test, or started again while its port was
        still held, leaves the next tests without a model server: every later test failed on
        "connection failed" once (CI, 2026-12-01). A daphne that is alive but not answering is
        started again too.
        """
        redis = self.stack.procs.get("redis")
        if redis is None or redis.poll() is not None:
            self.start_redis()
        if self.web_answers():
            return
        argv, env = self.stack.recipes["web"]
        for attempt in range(3):  # a port still held by the killed one makes a start exit at once
            self.stack.stop_one("web")
            proc = self.stack.spawn("web", argv, **env)
            try:
                wait_for(self.web_answers, timeout, "daphne after the chaos", proc)
            except StackError:
                if attempt == 2:
                    raise
                continue
            self.notes.append(f"healed: web started again (pid {proc.pid})")
            return

    def worker_answers(self) -> bool:
        from chatapp.celery import app

        try:
            return bool(app.control.ping(destination=[self.worker_name], timeout=0.5, limit=1))
        except Exception:  # noqa: BLE001 - broker not reachable yet
            return False

    def kill_worker(self) -> float:
        """SIGKILL the worker (and its process group); returns the time of the kill."""
        return self.stack.kill("worker")

    def wait_worker_died(self, timeout: float = 60) -> float:
        """Wait for a worker that kills itself (CLEARLOOP_CRASH_AT); returns when it was seen dead."""
        proc = self.worker
        assert proc is not None, "no worker running"
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the worker did not crash within {timeout:.0f} s") from None
        assert proc.returncode == -signal.SIGKILL, f"worker exited with {proc.returncode}"
        self.stack.procs.pop("worker", None)
        _signal_group(proc, signal.SIGKILL)  # children it left behind
        return time.time()

    def stop_worker(self) -> None:
        self.stack.stop_one("worker")

    def restart_after_kill(self, killed_at: float, **env: str) -> subprocess.Popen:
        """Start a clean worker once Redis will hand the dead worker's unacked task back.

        Redis restores a task whose delivery is older than the visibility timeout; a new worker
        sweeps once when it starts, so it must start at least that long after the task was taken.
        """
        visibility = float(self.stack.env.get("CELERY_VISIBILITY_TIMEOUT", "1"))
        delay = killed_at + visibility + 0.2 - time.time()
        if delay > 0:
            time.sleep(delay)
        return self.start_worker(**env)

    def kill_redis(self) -> None:
        self.stack.kill("redis")

    def start_redis(self) -> None:
        """Redis again, empty (no persistence): every queue and group is gone."""
        self.stack.start_redis()

    def worker_log(self) -> str:
        path = self.stack.log_dir / "worker.log"
        return path.read_text(errors="replace") if path.exists() else ""


@contextlib.contextmanager
def celery_broker(url: str, queue: str):
    """Point this process's Celery app (used by services that enqueue) at the private Redis."""
    from chatapp.celery import app

    saved = app.conf.broker_url, app.conf.task_default_queue

    def reset() -> None:
        from kombu import pools

        if app._pool is not None:
            app._pool.force_close_all()
            app._pool = None
        app.amqp._producer_pool = None
        # kombu keeps producer pools in a process-wide registry keyed by broker URL: a pool closed
        # above would be handed out again the next time the same URL is used.
        pools.reset()

    reset()
    app.conf.broker_url = url
    app.conf.task_default_queue = queue
    try:
        yield app
    finally:
        reset()
        app.conf.broker_url, app.conf.task_default_queue = saved


def start_durable_stack(data_dir: Path, port: int, redis_port: int, **extra: str) -> DurableStack:
    from tests.integration.stack import free_port, stack_env

    queue = f"clearloop-durable-{uuid.uuid4().hex[:8]}"
    # A demo MCP port of its own: another pytest process (make test runs several) may serve 8765.
    mcp_port = free_port()
    env = stack_env(port, data_dir, CLEARLOOP_QUEUE=queue, CLEARLOOP_DEMO_MCP_PORT=str(mcp_port))
    env.update(
        {
            "CELERY_VISIBILITY_TIMEOUT": "1",
            # Recovery from a dead worker comes from its heartbeat stopping (WORKER_DEAD_SECONDS); a
            # lease this short would lapse on a loaded machine and hand a live run to a second driver.
            "CLEARLOOP_RUN_LEASE_SECONDS": "10",
            "CLEARLOOP_RUN_MAX_DELIVERIES": "5",
            # One test user follows up to 20 runs at once, reconnecting through restarts.
            "CLEARLOOP_MAX_WEBSOCKETS_PER_USER": "1000",
            # Slow enough for a client to drop ~20 times in one answer, fast enough for the matrix.
            "DEMO_MODEL_TOKENS_PER_SECOND": "15",
        }
    )
    env.update(extra)
    stack = Stack(
        port=port,
        with_worker=False,
        log_dir=data_dir / "logs",
        env=env,
        redis_port=redis_port,
        demo_mcp_port=mcp_port,
    )
    stack.start()  # stops what it started if it fails
    return DurableStack(
        stack=stack,
        data_dir=data_dir,
        queue=queue,
        base_url=f"http://127.0.0.1:{port}",
        demo_url=env["DEMO_MODEL_URL"],
    )


def stop_durable_stack(durable: DurableStack) -> None:
    durable.stop_worker()
    durable.stack.stop()


# --- waiting and reading ---------------------------------------------------------------------------


def wait_run(run_id: int, statuses: tuple[str, ...] = TERMINAL, timeout: float = 60) -> Any:
    from chatapp.models import Run

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = Run.objects.get(pk=run_id)
        if run.status in statuses:
            return run
        time.sleep(0.1)
    run = Run.objects.get(pk=run_id)
    raise AssertionError(f"run {run_id} is {run.status}, not one of {statuses}, after {timeout:.0f} s")


def wait_until(predicate, timeout: float, what: str, step: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(step)
    raise AssertionError(f"{what}: not seen within {timeout:.0f} s")


def outbox_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def env_of(proc: subprocess.Popen) -> dict[str, str]:  # pragma: no cover - debugging aid
    raw = Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def pids_alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
            alive.append(pid)
        except ProcessLookupError:
            pass
    return alive


# --- what every recovered run must satisfy ---------------------------------------------------------

FINAL_CALL_STATUSES = ("invalid", "denied", "succeeded", "failed", "unknown")


def check_recovered(run_id: int, outbox: Path, sent_before_kill: int = 0) -> dict[str, Any]:
    """The kill-matrix invariants; returns the figures the docs table shows.

    - the run is terminal (succeeded or failed);
    - no round is requested again once its response was stored (no ``round_started`` for an index
      after its ``round_finished``), each stored once, and one Round row per stored response;
    - no tool call changes after a final status, no call id twice;
    - side effects: outbox lines == send_message calls that succeeded + ``sent_before_kill``
      (a send that happened but whose result was lost is ``unknown`` and counted there);
    - the run was delivered more than once (the kill really interrupted it).
    """
    from chatapp.models import Round, Run, RunEvent, ToolCall

    run = Run.objects.get(pk=run_id)
    assert run.status in ("succeeded", "failed", "denied"), (run.status, run.error_class, run.error)
    finished: set[int] = set()
    closed: set[tuple[int, int]] = set()
    starts: dict[int, int] = {}
    for kind, payload in RunEvent.objects.filter(run=run).order_by("seq").values_list("type", "payload"):
        if kind == "round_started":
            index = payload["round_index"]
            assert index not in finished, f"round {index} was requested again after its response was stored"
            starts[index] = starts.get(index, 0) + 1
        elif kind == "round_finished":
            index = payload["round_index"]
            assert index not in finished, f"round {index} stored twice"
            finished.add(index)
        elif kind == "tool_call":
            key = (payload["round_index"], payload["index"])
            assert key not in closed, f"tool call {key} changed after it was final: {payload['status']}"
            if payload["status"] in FINAL_CALL_STATUSES:
                closed.add(key)
    assert Round.objects.filter(run=run).count() == len(finished) == run.rounds_count
    calls = list(ToolCall.objects.filter(run=run))
    assert len({c.call_id for c in calls}) == len(calls), "a tool call id appears twice"
    assert all(c.status in FINAL_CALL_STATUSES for c in calls), [(c.name, c.status) for c in calls]
    sends = [c for c in calls if c.name.endswith("send_message")]
    succeeded = sum(c.status == "succeeded" for c in sends)
    lines = outbox_lines(outbox)
    assert len(lines) == succeeded + sent_before_kill, (len(lines), [(c.status) for c in sends])
    return {
        "status": run.status,
        "deliveries": run.deliveries,
        "rounds": len(finished),
        "round_requests": sum(starts.values()),
        "calls": {f"{c.name}": c.status for c in calls},
        "attempts": {c.name: c.attempts for c in calls},
        "outbox": len(lines),
    }
