"""One asyncio loop per worker process, in a background thread, shared by every Celery task.

A Celery task admits its run into this loop (``carrier.py``) and returns: the runs a worker carries
are bounded by ``CLEARLOOP_WORKER_RUNS``, not by Celery's threads. Model calls and MCP calls are
I/O, so one process multiplexes many runs, and the shared httpx client and the MCP session pool
stay warm between runs (ARCHITECTURE: Concurrency).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import httpx

from chatapp.worker.carrier import RunCarrier
from chatapp.worker.frame_batch import FrameBatcher
from chatapp.worker.model_http import ModelClient
from chatapp.worker.start_pacer import StartPacer

log = logging.getLogger(__name__)


class WorkerRuntime:
    def __init__(self) -> None:
        from django.conf import settings

        from chatapp import gil

        gil.tune(settings.GIL_SWITCH_MS)
        if settings.GC_FREEZE:
            from chatapp.gc_freeze import freeze_startup

            freeze_startup()  # built when the worker is ready (recovery.warm_up): the app is loaded
        from agent.context.tokens import preload

        preload()  # here, on the thread starting the runtime, not in a run's first round on the loop
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="clearloop-runtime", daemon=True)
        self._ready = threading.Event()
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self.http: httpx.AsyncClient | None = None
        self.resources: dict[str, Any] = {}
        self._frames: FrameBatcher | None = None
        # Django's ORM is synchronous: a few dedicated threads keep one connection each.
        self.db_executor = ThreadPoolExecutor(max_workers=8, thread_name_prefix="clearloop-db")
        # The live frames' writes have a thread of their own: behind the DB threads, the first and last
        # frames of every stream waited for a burst of run starts and ends (docs/performance.md,
        # session 14).
        self.frames_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clearloop-frames")
        self.runs = RunCarrier(settings.WORKER_RUNS)
        self.drain_seconds = float(settings.WORKER_DRAIN_SECONDS)
        self._thread.start()
        self._ready.wait()
        from chatapp.worker.cancels import CancelWatcher

        self.cancels = CancelWatcher(self)
        # How late the loop runs its callbacks: the recorder widens its frames when the loop is busy.
        self.lag = 0.0
        # Bounded below the channel layer's Redis connection pool: a burst of frames from hundreds of
        # runs waits for a slot instead of failing with "too many connections".
        self.publish_slots = asyncio.Semaphore(64)
        # Run ends stored at once (settings.WORKER_END_SLOTS): a burst of ends must not take every DB
        # thread, and with them the GIL, from the loop while other runs still stream.
        self.end_slots = asyncio.Semaphore(settings.WORKER_END_SLOTS)
        self.pacer = StartPacer(lambda: self.lag, settings.WORKER_PACE_LAG_MS / 1000)
        # Frames published on commit from the DB threads (a lease taken, a poison run failed) leave
        # through this loop's channel layer, like every other frame of this process.
        from chatapp import frames

        frames.use_publisher(self._publish_soon)
        self._lag_ticking = False

    def _publish_soon(self, conversation_id: int, items: list[Any]) -> None:
        from chatapp import frames

        async def send() -> None:
            async with self.publish_slots:
                await frames.publish(conversation_id, items)

        self.submit(send())

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        self.loop.run_forever()

    def _measure_lag(self, scheduled: float) -> None:
        late = max(0.0, time.monotonic() - scheduled)
        self.lag = 0.8 * self.lag + 0.2 * late  # smoothed, so one slow tick does not swing it
        if not self.cancels.watched:
            # Idle: no wake-ups at all until a run starts (idle cost, docs/performance.md).
            self._lag_ticking = False
            self.lag = 0.0
            return
        self.loop.call_later(LAG_TICK, self._measure_lag, time.monotonic() + LAG_TICK)

    def busy(self) -> None:
        """A run started: measure how late the loop runs while there is work."""
        if not self._lag_ticking:
            self._lag_ticking = True
            self.loop.call_soon(self._measure_lag, time.monotonic())

    def submit[T](self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run[T](self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return self.submit(coro).result(timeout)

    async def http_client(self) -> httpx.AsyncClient:
        if self.http is None:
            # Every run carried streams on its own connection: a cap below the carrier's capacity made
            # runs past it wait for a connection while holding their slot.
            runs = self.runs.capacity
            limits = httpx.Limits(
                max_connections=max(500, 2 * runs), max_keepalive_connections=max(100, runs)
            )
            # httpx's API over aiohttp's connections: half the CPU per streamed token (model_http.py).
            self.http = ModelClient(limits=limits, timeout=httpx.Timeout(600.0, connect=10.0))
            self.on_close(self.http.aclose)
        return self.http

    @property
    def frames(self) -> FrameBatcher:
        if self._frames is None:
            from channels.layers import get_channel_layer

            self._frames = FrameBatcher(self, get_channel_layer())
        return self._frames

    async def db[T](self, fn: Callable[..., T], *args: Any) -> T:
        return await self.loop.run_in_executor(self.db_executor, _with_fresh_connection, fn, args)

    async def db_frames[T](self, fn: Callable[..., T], *args: Any) -> T:
        """``db`` on the live frames' own thread (one write in flight at a time: ``FrameBatcher``)."""
        return await self.loop.run_in_executor(self.frames_executor, _with_fresh_connection, fn, args)

    def db_now[T](self, fn: Callable[..., T], *args: Any) -> T:
        """``db`` for a thread outside the loop (a Celery task): the DB threads, without the loop."""
        return self.db_executor.submit(_with_fresh_connection, fn, args).result()

    def db_soon[T](self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """``db`` started now from a thread outside the loop; the caller collects the result later
        (``asyncio.wrap_future`` on the loop), so it overlaps with what that thread does next."""
        return self.db_executor.submit(_with_fresh_connection, fn, args)

    def on_close(self, closer: Callable[[], Awaitable[None]]) -> None:
        self._closers.append(closer)

    async def _aclose(self) -> None:
        for closer in reversed(self._closers):
            try:
                await asyncio.wait_for(closer(), timeout=10)
            except Exception:  # noqa: BLE001 - shutting down: log and keep closing the rest
                log.exception("error while closing worker runtime resource")
        self._closers.clear()

    def close(self) -> list[int]:
        """Drain the carried runs, close the shared resources; returns the runs handed back unfinished."""
        if not self.loop.is_running():
            return []
        from chatapp import frames

        self.runs.close()
        handed_back: list[int] = []
        try:
            handed_back = self.run(self.runs.drain(self.drain_seconds), timeout=self.drain_seconds + 30)
        except Exception:  # noqa: BLE001 - still close the rest; their leases lapse, the sweep resumes them
            log.exception("draining the worker's runs failed")
        frames.use_publisher(None)
        try:
            self.run(self._aclose(), timeout=30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=5)
            self.db_executor.shutdown(wait=False, cancel_futures=True)
            self.frames_executor.shutdown(wait=False, cancel_futures=True)
        return handed_back


LAG_TICK = 0.05
_checked = threading.local()
HEALTH_CHECK_EVERY = 30.0


def _with_fresh_connection[T](fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    from django.db import close_old_connections

    # A long-lived thread may hold a connection the server has since closed. Checking costs a round
    # trip, so each DB thread checks at most every 30 s, and again right after a failure.
    now = time.monotonic()
    if now - getattr(_checked, "at", 0.0) > HEALTH_CHECK_EVERY:
        close_old_connections()
        _checked.at = now
    try:
        return fn(*args)
    except Exception:
        _checked.at = 0.0
        raise


_runtime: WorkerRuntime | None = None
_lock = threading.Lock()


def get_runtime() -> WorkerRuntime:
    global _runtime
    with _lock:
        if _runtime is None:
            _runtime = WorkerRuntime()
        return _runtime


def current_runtime() -> WorkerRuntime | None:
    """The runtime if this process started one (a signal handler must not start one)."""
    return _runtime


def shutdown_runtime() -> list[int]:
    """Close the runtime; returns the runs it handed back unfinished (to be enqueued again)."""
    global _runtime
    with _lock:
        runtime, _runtime = _runtime, None
    return runtime.close() if runtime is not None else []
