"""Runs start one at a time while the worker's loop runs late.

A start (the lease, the context, the first request) costs the worker ~10 ms of the GIL on the DB
threads, and the streams already running need the loop, which shares that GIL. When many runs are
sent at once, eight Celery threads taking leases side by side left the loop a ninth of the
interpreter, and every running stream's tokens waited (200 runs sent together: token lag p99 0.5-1.2
s in the burst's first seconds, docs/performance.md, session 17). While the loop is late by more than
``limit`` seconds, starts take turns: the burst takes a little longer to start and the streams keep
flowing. An idle or lightly loaded worker (the loop on time) starts runs side by side as before.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


class StartPacer:
    def __init__(self, lag: Callable[[], float], limit: float) -> None:
        self._lag = lag  # seconds the loop runs its callbacks late, now (``WorkerRuntime.lag``)
        self.limit = limit  # 0: never paced
        self._turn = threading.Lock()

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Held around a start's work on the Celery thread; waits its turn only while the loop is late."""
        if self.limit and self._lag() > self.limit:
            with self._turn:
                yield
        else:
            yield
