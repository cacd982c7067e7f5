"""The sweep every worker runs: runs that should be moving but that nobody drives are enqueued again.

- running runs whose worker stopped beating (``runs_of_dead_workers``): within seconds of the death;
- running runs whose lease lapsed (a worker alive but stuck, or one from before heartbeats);
- queued runs nobody took within ``RUN_QUEUED_GRACE_SECONDS`` (their task message was lost, or the
  broker was down when they were sent); enqueued again at most once per grace period. Not while
  their message may simply be waiting its turn: a run a live worker holds waiting for a slot of its
  capacity is not lost (this worker's own at once, the others' as their heartbeats report them:
  ``liveness.held_by_live_workers``), and while the broker's run queue holds messages (a backlog:
  more runs sent than the workers carry) a queued run is enqueued again only once it has waited
  ``BACKLOG_PATIENCE`` grace periods. Before, every queued run behind a backlog was enqueued again
  every 20 s by every worker: the queue grew with duplicates that each took a slot to be refused.

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


BACKLOG_PATIENCE = 10  # grace periods a queued run may wait behind a backlog before it counts as lost


class Sweeper:
    def __init__(
        self,
        enqueue: Callable[[int], None],
        backlog: Callable[[], int] = lambda: 0,
        held: Callable[[], set[int]] = set,
    ) -> None:
        """``backlog``: messages waiting in the broker's run queue; ``held``: runs the workers'
        Celery threads hold, waiting for a slot of their capacity (this one's and, as of their last
        beat, the other live workers')."""
        self.enqueue = enqueue
        self.backlog = backlog
        self.held = held
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
        held = self.held() if lost else set()  # only asked when something looks lost
        due = [
            run_id
            for run_id in lost
            if run_id not in held and now - self.requeued_at.get(run_id, -grace) >= grace
        ]
        if due and (waiting := self._backlog()):
            patient = [run_id for run_id in due if lost[run_id] < BACKLOG_PATIENCE * grace]
            log.debug("%s queued runs wait behind %s messages in the run queue", len(patient), waiting)
            due = [run_id for run_id in due if run_id not in patient]
        for run_id in due:
            self.requeued_at[run_id] = now
            log.warning("run %s: queued for over %s s without a worker; enqueuing it again", run_id, grace)
        return due

    def _backlog(self) -> int:
        try:
            return self.backlog()
        except Exception:  # noqa: BLE001 - the broker cannot be asked: treat it as no backlog
            log.warning("could not read the run queue's length", exc_info=True)
            return 0

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


def start_sweeper(
    enqueue: Callable[[int], None], backlog: Callable[[], int], held: Callable[[], set[int]]
) -> threading.Thread:
    sweeper = Sweeper(enqueue, backlog, held)
    thread = threading.Thread(target=sweeper.forever, name="clearloop-sweep", daemon=True)
    thread.start()
    return thread
