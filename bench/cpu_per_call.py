"""The CPU this process spends per call of a bench's step (p50 and mean over ``n`` calls), with an
optional cProfile of the measured calls: what the in-process benches (``sendview``, ``steprun``) share."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import NamedTuple


class Measured(NamedTuple):
    p50: float  # CPU of this process per call, ms
    mean: float
    wall_p50: float  # wall-clock time per call, ms: what waiting on the database adds shows here


def measure(
    step: Callable[[int], object], n: int, profile: str = "", after: Callable[[int], object] | None = None
) -> Measured:
    """``step(i)`` for i in 0..n-1; returns the p50 and mean of its CPU and the p50 of its wall time, ms. ``profile``: a file for the
    cProfile of the measured calls; ``after(i)``: what each call needs done before the next one, not
    measured (the send bench marks its run finished)."""
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
    cpu, wall = [], []
    for i in range(n):
        w0, t0 = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        step(i)
        if profiler:
            profiler.disable()
        cpu.append((time.process_time() - t0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
        if after:
            after(i)
    if profiler:
        profiler.dump_stats(profile)
    return Measured(statistics.median(cpu), statistics.fmean(cpu), statistics.median(wall))
