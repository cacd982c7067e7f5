"""How many of a worker's runs may be starting at once (``CLEARLOOP_WORKER_STARTS``).

A run's start (reading its context, building its toolbox and provider, preparing the first request)
is CPU work on the worker's one core, and the streams already running share that core. Admitted
without a bound, a burst of 200 sends started 200 runs at once: for about four seconds every token
of the runs already streaming waited behind that work (issue 15 target 4: a token's p99 added
latency ~1 s). Through this gate only a few start at a time; a run leaves it at the engine's first
event (its first request is prepared, or, resumed after an approval, its first call begins; or its
delivery ends first), so the streams get the core between starts. Admission (``carrier.py``) still
bounds how many runs a worker carries; this only orders their starts.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from chatapp.worker.start_spans import StartSpans


class StartGate:
    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._free = asyncio.Semaphore(slots)  # bound to the loop it is first awaited on
        self.starting = 0  # runs past the gate whose first request has not left (for tests, docs)

    @asynccontextmanager
    async def start(self, spans: StartSpans) -> AsyncIterator[None]:
        """Held from the run's turn to start until the engine emits its first event (``spans.started``):
        a first round's request is prepared, or a resumed run's approved call begins."""
        await self._free.acquire()
        self.starting += 1
        held = True

        def leave() -> None:
            nonlocal held
            if held:
                held = False
                self.starting -= 1
                self._free.release()

        spans.mark("started")
        spans.on_started = leave
        try:
            yield
        finally:
            spans.on_started = None
            leave()
