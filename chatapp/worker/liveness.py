"""Worker heartbeats: a run whose worker died is taken back within seconds, not when its lease ends.

Every worker process writes ``WorkerBeat.beat_at`` every ``WORKER_HEARTBEAT_SECONDS`` from a thread of
its own (not the runtime's loop, so a busy loop does not look like a death). A lease names the worker
that took it (``<worker id>/<nonce>``); the sweep (``chatapp/worker/sweep.py``) treats a lease whose
worker has not beaten for ``WORKER_DEAD_SECONDS`` as lapsed. The lease still decides who runs a run:
a worker that was wrongly declared dead finds its lease gone at the next renewal and stops.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

log = logging.getLogger(__name__)

WORKER_ID = f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def lease_owner() -> str:
    """A fresh lease owner that names this worker process."""
    return f"{WORKER_ID}/{uuid.uuid4().hex[:8]}"


def worker_of(owner: str) -> str | None:
    """The worker id inside a lease owner; None for owners written before heartbeats existed."""
    worker, sep, _ = owner.rpartition("/")
    return worker if sep else None


def beat(now: datetime | None = None, holding: Iterable[int] = ()) -> None:
    """``holding``: the runs this worker holds for a slot of its capacity (``carrier.waiting``)."""
    from chatapp.models import WorkerBeat

    now = now or timezone.now()
    held = sorted(holding)
    if not WorkerBeat.objects.filter(pk=WORKER_ID).update(beat_at=now, holding=held):
        WorkerBeat.objects.create(
            worker_id=WORKER_ID,
            queue=str(settings.CELERY_TASK_DEFAULT_QUEUE),
            started_at=now,
            beat_at=now,
            holding=held,
        )


def held_by_live_workers(now: datetime | None = None) -> set[int]:
    """The runs the live workers of this queue held for a slot at their last beat: with several
    workers, a run another worker holds looks lost to this worker's sweep (queued for long, not in the
    broker's queue, not in this worker's own hand) while its message is only waiting its turn there.
    A worker that stops beating stops holding: its runs are then enqueued again."""
    from chatapp.models import WorkerBeat

    fresh = (now or timezone.now()) - timedelta(seconds=settings.WORKER_DEAD_SECONDS)
    live = WorkerBeat.objects.filter(queue=settings.CELERY_TASK_DEFAULT_QUEUE, beat_at__gte=fresh)
    return {run_id for holding in live.values_list("holding", flat=True) for run_id in holding or ()}


def dead_workers(worker_ids: set[str], now: datetime | None = None) -> set[str]:
    """Those of ``worker_ids`` serving this worker's queue that have not beaten recently."""
    from chatapp.models import WorkerBeat

    if not worker_ids:
        return set()
    now = now or timezone.now()
    fresh = now - timedelta(seconds=settings.WORKER_DEAD_SECONDS)
    ours = WorkerBeat.objects.filter(pk__in=worker_ids, queue=settings.CELERY_TASK_DEFAULT_QUEUE)
    return set(ours.filter(beat_at__lt=fresh).values_list("pk", flat=True))


def is_alive(owner: str) -> bool:
    """True when the lease's worker beat recently (whatever its queue)."""
    from chatapp.models import WorkerBeat

    worker = worker_of(owner)
    fresh = timezone.now() - timedelta(seconds=settings.WORKER_DEAD_SECONDS)
    return worker is not None and WorkerBeat.objects.filter(pk=worker, beat_at__gte=fresh).exists()


def queue_has_live_worker() -> bool:
    """True when a worker of this deployment's queue beat recently. Such a worker takes a queued task
    once its broker connection is back, even while it does not answer a ping: Celery's Redis consumer
    reconnects with a back-off and its remote-control channel comes back last (celery#7817, #8990)."""
    from chatapp.models import WorkerBeat

    fresh = timezone.now() - timedelta(seconds=settings.WORKER_DEAD_SECONDS)
    return WorkerBeat.objects.filter(queue=settings.CELERY_TASK_DEFAULT_QUEUE, beat_at__gte=fresh).exists()


def forget_old_workers(days: int = 1) -> None:
    from chatapp.models import WorkerBeat

    WorkerBeat.objects.filter(beat_at__lt=timezone.now() - timedelta(days=days)).delete()


class Heartbeat(threading.Thread):
    def __init__(self, holding: Callable[[], set[int]] = set) -> None:
        super().__init__(name="clearloop-heartbeat", daemon=True)
        self.holding = holding
        self.stopping = threading.Event()

    def run(self) -> None:
        while True:
            try:
                close_old_connections()
                beat(holding=self.holding())
            except Exception:  # noqa: BLE001 - the database is away: try again on the next tick
                log.warning("worker heartbeat failed", exc_info=True)
            if self.stopping.wait(settings.WORKER_HEARTBEAT_SECONDS):
                return


_heartbeat: Heartbeat | None = None


def start_heartbeat(holding: Callable[[], set[int]] = set) -> None:
    global _heartbeat
    if _heartbeat is None or not _heartbeat.is_alive():
        # Its first beat is written at once by the thread (retried there if the database is away).
        _heartbeat = Heartbeat(holding)
        _heartbeat.start()
