"""Fair service of the worker's DB threads between the runs it carries (issue 16 item 2)."""

from __future__ import annotations

import contextvars
import heapq
import itertools
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

# The run a coroutine works for (set by the driver for its run's task): its DB jobs are queued by it.
RUN: contextvars.ContextVar[int | None] = contextvars.ContextVar("clearloop_run", default=None)


class FairJobs:
    """The DB threads' work queue, served by least attained service instead of first come.

    A run has one DB job out at a time, so first come already takes turns between runs; but 20 runs
    that each need two model rounds and a tool call then hold back a one-round run's last jobs as
    long as their own later ones. Here the job of the run that has had the least DB-thread time so
    far goes first (a run that just started, or a short one finishing), and jobs for no run (leases
    taken by Celery threads, the frame batches of every run) go before any run's. The queue is
    ``ThreadPoolExecutor``'s work queue (``put``/``get``/``get_nowait``); the priority is read from
    ``RUN`` in the thread that queues the job (the loop, in the run's task).
    """

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Any]] = []
        self._cond = threading.Condition()
        self._order = itertools.count()
        self.attained: dict[int, float] = {}  # run id -> seconds of DB-thread time so far

    def timed[T](self, run_id: int, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)`` in a DB thread, its time added to the run's."""
        started = time.monotonic()
        try:
            return call(*args)
        finally:
            with self._cond:
                self.attained[run_id] = self.attained.get(run_id, 0.0) + time.monotonic() - started

    def forget(self, run_id: int) -> None:
        with self._cond:
            self.attained.pop(run_id, None)

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        run_id = RUN.get()
        with self._cond:
            # None wakes a thread to exit (shutdown): first. Jobs for no run: before any run's.
            rank = -1.0 if item is None or run_id is None else self.attained.get(run_id, 0.0)
            heapq.heappush(self._heap, (rank, next(self._order), item))
            self._cond.notify()

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        with self._cond:
            while not self._heap:
                if not block:
                    raise queue.Empty
                self._cond.wait()
            return heapq.heappop(self._heap)[2]

    def get_nowait(self) -> Any:
        return self.get(block=False)

    def qsize(self) -> int:
        return len(self._heap)

    def empty(self) -> bool:
        return not self._heap


def outside_runs() -> contextvars.Context:
    """A context for a task that serves the whole worker (the frame batches, the stop watch), so its
    DB jobs are no run's even when a run's task started it."""
    context = contextvars.copy_context()
    context.run(RUN.set, None)
    return context
