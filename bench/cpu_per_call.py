"""The CPU this process spends per call of a bench's step (p50 and mean over ``n`` calls), with an
optional cProfile of the measured calls: what the in-process benches (``sendview``, ``steprun``) share."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def measure(
    step: Callable[[int], object], n: int, profile: str = "", after: Callable[[int], object] | None = None
) -> tuple[float, float]:
    """``step(i)`` for i in 0..n-1; returns (p50, mean) of its CPU in ms. ``profile``: a file for the
    cProfile of the measured calls; ``after(i)``: what each call needs done before the next one, not
    measured (the send bench marks its run finished)."""
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
    cpu = []
    for i in range(n):
        t0 = time.process_time()
        if profiler:
            profiler.enable()
        step(i)
        if profiler:
            profiler.disable()
        cpu.append((time.process_time() - t0) * 1000)
        if after:
            after(i)
    if profiler:
        profiler.dump_stats(profile)
    return statistics.median(cpu), statistics.fmean(cpu)
