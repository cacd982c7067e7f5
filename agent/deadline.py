"""A call's deadline that progress pushes back, never past a hard maximum.

MCP spec 2025-11-25 ``basic/lifecycle.mdx`` (Timeouts): "Implementations MAY choose to reset the
timeout clock when receiving a progress notification corresponding to the request, as this implies
that work is actually happening. However, implementations SHOULD always enforce a maximum timeout,
regardless of progress notifications". ``idle`` is the time allowed without any sign of life,
``hard`` the maximum from the start whatever happens.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class Deadline:
    def __init__(self, idle: float, hard: float | None = None) -> None:
        self.idle = idle
        self.hard = max(idle, hard if hard is not None else idle)
        self.extended = False
        self._timeout: asyncio.Timeout | None = None
        self._started = 0.0
        self._paused = 0

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Deadline]:
        """Raises ``TimeoutError`` when the deadline passes inside the block."""
        loop = asyncio.get_running_loop()
        self._started = loop.time()
        async with asyncio.timeout(self.idle) as timeout:
            self._timeout = timeout
            try:
                yield self
            finally:
                self._timeout = None

    def extend(self) -> None:
        """Progress was reported: allow another ``idle`` seconds, capped at ``hard`` from the start."""
        if self._timeout is None or self._paused:
            return
        now = asyncio.get_running_loop().time()
        when = min(now + self.idle, self._started + self.hard)
        self._reschedule(max(when, self._timeout.when() or when))
        self.extended = True

    @asynccontextmanager
    async def paused(self, longest: float) -> AsyncIterator[None]:
        """While a person is asked something the clock stops (for at most ``longest`` seconds).

        On leaving, the call gets a fresh ``idle`` period and the hard maximum grows by the wait:
        the time was the person's, not the tool's.
        """
        if self._timeout is None:
            yield
            return
        loop = asyncio.get_running_loop()
        began = loop.time()
        self._paused += 1
        self._reschedule(began + longest)
        try:
            yield
        finally:
            self._paused -= 1
            self.hard += loop.time() - began  # the hard maximum does not count the person's time
            if not self._paused:
                now = loop.time()
                self._reschedule(min(now + self.idle, self._started + self.hard))

    def _reschedule(self, when: float) -> None:
        try:
            if self._timeout is not None:
                self._timeout.reschedule(when)
        except RuntimeError:  # already expiring or left: nothing to move
            pass

    def describe(self) -> str:
        if self.extended:
            return f"{self.idle:g} s after its last progress report (at most {self.hard:g} s in all)"
        return f"{self.idle:g} s"
