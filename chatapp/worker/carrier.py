"""The runs a worker process carries: admitted by a capacity, driven on the runtime's loop.

A Celery task only admits its run: it waits here for a slot (``CLEARLOOP_WORKER_RUNS``, set from the
measured capacity in docs/performance.md), takes the lease, starts the run as a task on the
worker's one asyncio loop and returns, so its task message is acknowledged and the Celery thread is
free for the next one. From then on nothing in the broker speaks for the run: the lease (renewed by
the driver) and the heartbeat do. A worker that dies leaves leases whose worker stopped beating, and
every worker's sweep enqueues those runs again within seconds (``sweep.py``); the lease lets exactly
one delivery drive a run.

While the worker carries its capacity the Celery thread waits for a slot, holding its message
unacknowledged: with ``--prefetch-multiplier 1`` the worker then fetches nothing more and the
broker hands new runs to other workers. A worker that is shutting down admits nothing: a waiting
task's message goes back to the queue. At shutdown the runs still carried get ``DRAIN`` seconds to
end, then each is handed back: cancelled at its next await, its lease released without counting
the segment as a delivery, and enqueued again for a worker that is up.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)


class Closing(Exception):
    """The worker is shutting down and admits no run."""


class RunCarrier:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._cond = threading.Condition()
        self._admitted = 0  # slots taken: runs carried plus admissions taking their lease
        self._waiting: set[int] = set()  # runs whose Celery thread waits here for a slot
        self.closing = False
        self.tasks: dict[int, asyncio.Task] = {}  # run id -> its drive task (touched on the loop only)
        self.peak = 0

    @property
    def carrying(self) -> int:
        return self._admitted

    @property
    def waiting(self) -> set[int]:
        """The runs waiting for a slot (a copy): their messages are here, not lost (``sweep.py``)."""
        with self._cond:
            return set(self._waiting)

    def admit(self, run_id: int | None = None) -> None:
        """Block the calling (Celery) thread until a slot is free; ``Closing`` once shutting down."""
        with self._cond:
            if run_id is not None:
                self._waiting.add(run_id)
            try:
                while not self.closing and self._admitted >= self.capacity:
                    self._cond.wait()
            finally:
                if run_id is not None:
                    self._waiting.discard(run_id)
            if self.closing:
                raise Closing
            self._admitted += 1
            self.peak = max(self.peak, self._admitted)

    def release(self) -> None:
        with self._cond:
            self._admitted -= 1
            self._cond.notify()

    def close(self) -> None:
        """Admit nothing more; wake every waiting admission (called from a signal handler too)."""
        with self._cond:
            self.closing = True
            self._cond.notify_all()

    def start(
        self,
        loop: asyncio.AbstractEventLoop,
        run_id: int,
        drive: Callable[[], Coroutine[Any, Any, None]],
    ) -> None:
        """Start an admitted run on ``loop``; its slot is released when it ends, however it ends."""

        def begin() -> None:
            task = loop.create_task(drive(), name=f"run-{run_id}")
            self.tasks[run_id] = task
            task.add_done_callback(lambda t: self._ended(run_id, t))

        try:
            loop.call_soon_threadsafe(begin)
        except RuntimeError:  # the loop is closed: the caller hands the run back
            self.release()
            raise

    def _ended(self, run_id: int, task: asyncio.Task) -> None:
        if self.tasks.get(run_id) is task:
            del self.tasks[run_id]
        self.release()
        if not task.cancelled() and task.exception() is not None:
            log.error("run %s: its driver failed", run_id, exc_info=task.exception())

    async def drain(self, seconds: float) -> list[int]:
        """Wait up to ``seconds`` for the carried runs to end; cancel the rest. Returns their ids."""
        deadline = time.monotonic() + seconds
        while self.tasks and time.monotonic() < deadline:
            await asyncio.wait(list(self.tasks.values()), timeout=deadline - time.monotonic())
        left = dict(self.tasks)
        for task in left.values():
            task.cancel()
        if left:
            # Each driver stores what it has and hands its lease back (bounded: the database may be away).
            await asyncio.wait(list(left.values()), timeout=15)
        return sorted(left)
