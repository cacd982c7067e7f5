"""The sweep every worker runs: runs that should be moving but that nobody drives are enqueued again.

- running runs whose worker stopped beating (``runs_of_dead_workers``): within seconds of the death;
- running runs whose lease lapsed (a worker alive but stuck, or one from before heartbeats);
- queued runs nobody took within ``RUN_QUEUED_GRACE_SECONDS`` (their task message was lost, or the
  broker was down when they were sent); enqueued again at most once per grace period.

Several workers may enqueue the same run: the lease lets exactly one of them drive it, so nothing
runs twice.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import close_old_connections

from chatapp.worker.lease import abandoned_runs, lost_queued_runs, orphaned_runs, runs_of_dead_workers
from chatapp.worker.liveness import forget_old_workers

log = logging.getLogger(__name__)


class Sweeper:
    def __init__(self, enqueue: Callable[[int], None]) -> None:
        self.enqueue = enqueue
        self.requeued_at: dict[int, float] = {}  # queued run -> when this worker last enqueued it

    def sweep_once(self) -> list[int]:
        close_old_connections()
        resumed = runs_of_dead_workers()
        for run_id in resumed:
            log.warning("run %s: its worker stopped beating; resuming it", run_id)
        resumed += abandoned_runs(grace_seconds=settings.RUN_LEASE_SECONDS)
        resumed += self._lost_queued()
        for run_id in dict.fromkeys(resumed):
            try:
                self.enqueue(run_id)
            except Exception:
                self.requeued_at.pop(run_id, None)  # the broker is away: try again next sweep
                raise
        return resumed

    def _lost_queued(self) -> list[int]:
        grace = settings.RUN_QUEUED_GRACE_SECONDS
        now = time.monotonic()
        lost = lost_queued_runs(grace)
        self.requeued_at = {k: v for k, v in self.requeued_at.items() if k in lost}
        due = [run_id for run_id in lost if now - self.requeued_at.get(run_id, -grace) >= grace]
        for run_id in due:
            self.requeued_at[run_id] = now
            log.warning("run %s: queued for over %s s without a worker; enqueuing it again", run_id, grace)
        return due

    def on_start(self) -> None:
        """Once per worker: forget long-dead workers and enqueue runs no live lease covers."""
        close_old_connections()
        forget_old_workers()
        for run_id in orphaned_runs():
            self.enqueue(run_id)

    def forever(self) -> None:
        started = False
        while True:
            try:
                if not started:
                    self.on_start()
                    started = True
                self.sweep_once()
            except Exception:  # noqa: BLE001 - the database or the broker is away: try again
                log.warning("sweeping runs failed", exc_info=True)
            time.sleep(settings.RUN_SWEEP_SECONDS)


def start_sweeper(enqueue: Callable[[int], None]) -> threading.Thread:
    thread = threading.Thread(target=Sweeper(enqueue).forever, name="clearloop-sweep", daemon=True)
    thread.start()
    return thread
