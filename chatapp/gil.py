"""How soon a thread that wants the GIL gets it back from one that is computing.

daphne and the worker each run one asyncio loop beside threads that do the ORM's work (Django's sync
views; the worker's DB threads). CPython lets a computing thread keep the GIL for the switch interval
(5 ms by default) before it hands over, and an I/O thread that wakes up often (the loop, on every
socket read) waits that long again at each wake-up (the "convoy effect"): while the threads were
busy with a burst of run starts, every stream's tokens queued behind them. Measured on the worker
(docs/performance.md, session 14): 200 runs at 20 tokens/s, token lag p99 1.3-1.6 s at 5 ms, 0.3-0.4 s
at 0.5 ms, for the same CPU per run.
"""

from __future__ import annotations

import sys


def tune(interval_ms: float) -> None:
    """Set this process's switch interval (``settings.GIL_SWITCH_MS``)."""
    sys.setswitchinterval(interval_ms / 1000)
