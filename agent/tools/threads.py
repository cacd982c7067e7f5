"""Blocking tool work in threads that can be abandoned (issue 16 item 2).

A tool's blocking part runs in a thread of this module's own pool, never on the event loop, so the
loop's deadline (``asyncio.timeout`` in ``agent.loop.execution``) and a user's Stop take effect at
once: the await is abandoned. The thread is told to stop through the ``Budget`` it was given, which the
work checks between steps (files, lines, rows); it ends within one step of the deadline or the
cancellation. The pool is separate from asyncio's default executor, so abandoned work never takes a
slot the worker's database calls need.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

_POOL = ThreadPoolExecutor(max_workers=32, thread_name_prefix="clearloop-tool")


class BudgetExceeded(Exception):
    """The work was stopped: its deadline passed or its caller went away."""


@dataclass(slots=True)
class Budget:
    deadline: float  # time.monotonic() value
    stopped: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def of(cls, seconds: float) -> Budget:
        return cls(time.monotonic() + seconds)

    def expired(self) -> bool:
        return self.stopped.is_set() or time.monotonic() > self.deadline

    def check(self) -> None:
        if self.expired():
            raise BudgetExceeded("stopped at the time limit" if not self.stopped.is_set() else "cancelled")


async def run_abandonable[T](fn: Callable[..., T], *args: object, budget: Budget) -> T:
    """Run ``fn(*args, budget)`` in a tool thread; cancelling the await abandons it and tells it to stop."""
    try:
        return await asyncio.get_running_loop().run_in_executor(_POOL, functools.partial(fn, *args, budget))
    except asyncio.CancelledError:
        budget.stopped.set()
        raise
