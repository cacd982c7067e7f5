"""The run lease: a redelivered or duplicated task never runs the same run twice at once.

A worker takes a run by setting ``lease_owner`` and ``lease_expires_at`` under a row lock, and renews
the lease while it works. A task that finds a live lease held by someone else does nothing. The
``deliveries`` counter fails a poison run (one that keeps killing its worker) after N attempts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Case, F, PositiveIntegerField, Value, When
from django.utils import timezone

from chatapp.event_log import Sequence
from chatapp.frames import Frame
from chatapp.models import Run
from chatapp.services.locked_run import locked_run
from chatapp.services.run_lifecycle import move_locked
from chatapp.worker.liveness import dead_workers, lease_owner, worker_of

RUNNABLE = (Run.Status.QUEUED, Run.Status.RUNNING)


class LeaseRefused(Exception):
    pass


class LeaseHeld(LeaseRefused):
    def __init__(self, message: str, retry_in: float, owner: str = "", status: str = "") -> None:
        super().__init__(message)
        self.retry_in = retry_in
        self.owner = owner
        self.status = status


def new_owner() -> str:
    return lease_owner()


@dataclass(frozen=True)
class TakenLease:
    owner: str
    first: bool  # the run's first delivery: nothing was stored before its "running" frame (seq 1)


def acquire_lease(run_id: int) -> str:
    return take_lease(run_id).owner


def take_lease(run_id: int) -> TakenLease:
    owner = new_owner()
    first = False
    now = timezone.now()
    poisoned = False
    with transaction.atomic():
        # The question comes with the row: the audit record of the move pins its digest.
        run = locked_run(run_id)
        if run is None:
            raise LeaseRefused("no such run")
        if run.status not in RUNNABLE:
            raise LeaseRefused(f"run is {run.status}")
        if run.lease_owner and run.lease_expires_at and run.lease_expires_at > now:
            remaining = (run.lease_expires_at - now).total_seconds()
            raise LeaseHeld(
                f"leased by {run.lease_owner} until {run.lease_expires_at:%H:%M:%S}",
                remaining + 1,
                run.lease_owner,
                run.status,
            )
        poisoned = run.deliveries >= settings.RUN_MAX_DELIVERIES
        if poisoned:
            # Committed with this block: raising inside it would roll the failure back.
            move_locked(
                run,
                Run.Status.FAILED,
                error_class="PoisonRun",
                error=f"The run was started {run.deliveries} times and never finished (its worker kept "
                "dying); it was stopped so it cannot take more workers down.",
            )
        else:
            frame = _take(run, owner, now)
            first = run.deliveries == 1 and frame["seq"] == 1
    if poisoned:
        raise LeaseRefused("poison run failed")
    return TakenLease(owner, first)


def _take(run: Run, owner: str, now: datetime) -> Frame:
    # A run never taken before has only the frames the web side stored, each of which moved
    # ``last_seq``: nothing can be missing, so its numbers follow ``last_seq`` without the look for
    # gaps a dead segment may have left (event_log.fill_gaps: one query on every start).
    seqs = Sequence(run.last_seq) if run.started_at is None and not run.deliveries else None
    # The "running" status frame goes out when this commits.
    return move_locked(
        run,
        Run.Status.RUNNING,
        seqs=seqs,
        lease_owner=owner,
        lease_expires_at=now + timedelta(seconds=settings.RUN_LEASE_SECONDS),
        deliveries=run.deliveries + 1,
        started_at=run.started_at or now,
    )


def renew_lease(run_id: int, owner: str) -> bool:
    expires = timezone.now() + timedelta(seconds=settings.RUN_LEASE_SECONDS)
    return bool(Run.objects.filter(pk=run_id, lease_owner=owner).update(lease_expires_at=expires))


def taken_over(run_id: int, owner: str) -> bool:
    """True when another worker now holds the run (this one was thought dead and replaced)."""
    others = Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).exclude(lease_owner__in=("", owner))
    return others.exists()


def release_lease(run_id: int, owner: str) -> None:
    # A run that paused for an approval ended its segment cleanly: it is not a poison candidate.
    # One statement (it was two, each its own commit).
    paused = When(status__in=(Run.Status.AWAITING_APPROVAL, Run.Status.AWAITING_SIGN_IN), then=Value(0))
    Run.objects.filter(pk=run_id, lease_owner=owner).update(
        deliveries=Case(paused, default=F("deliveries"), output_field=PositiveIntegerField()),
        lease_owner="",
        lease_expires_at=None,
    )


def hand_back(run_id: int, owner: str) -> None:
    """Let go of a run this worker was stopped in the middle of (a shutdown, not the run's fault).

    The segment does not count as a delivery: a worker restarted three times during one long run
    must not fail that run as poison. Another worker takes it from its stored rows.
    """
    Run.objects.filter(pk=run_id, lease_owner=owner, deliveries__gt=0).update(deliveries=F("deliveries") - 1)
    release_lease(run_id, owner)


def orphaned_runs(grace_seconds: int = 30) -> list[int]:
    """Runs that should be moving but that no live lease covers (a task lost with its worker)."""
    now = timezone.now()
    stale = now - timedelta(seconds=grace_seconds)
    runs = Run.objects.filter(status__in=RUNNABLE, created_at__lt=stale).exclude(lease_expires_at__gt=now)
    return list(runs.values_list("pk", flat=True))


def abandoned_runs(grace_seconds: int = 30) -> list[int]:
    """Running runs whose lease has lapsed: their worker died (a live one renews every lease/3)."""
    now = timezone.now()
    runs = Run.objects.filter(
        status=Run.Status.RUNNING, created_at__lt=now - timedelta(seconds=grace_seconds)
    )
    return list(runs.exclude(lease_expires_at__gt=now).values_list("pk", flat=True))


def runs_of_dead_workers() -> list[int]:
    """Running runs whose lease is live but whose worker stopped beating: the lease is ended now.

    Ending it only where the owner is still the dead worker's lease means a run that was just taken
    over by someone else is left alone.
    """
    now = timezone.now()
    leased = Run.objects.filter(status=Run.Status.RUNNING, lease_expires_at__gt=now).exclude(lease_owner="")
    owners = dict(leased.values_list("pk", "lease_owner"))
    workers = {w for w in map(worker_of, owners.values()) if w}
    dead = dead_workers(workers, now)
    taken = []
    for run_id, owner in owners.items():
        if worker_of(owner) in dead and Run.objects.filter(pk=run_id, lease_owner=owner).update(
            lease_expires_at=now
        ):
            taken.append(run_id)
    return taken


def lost_queued_runs(grace_seconds: int) -> dict[int, float]:
    """Queued runs nobody took within ``grace_seconds`` (their task message may have been lost), each
    with how long it has been queued, in seconds."""
    now = timezone.now()
    runs = Run.objects.filter(status=Run.Status.QUEUED, created_at__lt=now - timedelta(seconds=grace_seconds))
    rows = runs.exclude(lease_expires_at__gt=now).values_list("pk", "created_at")
    return {pk: (now - created).total_seconds() for pk, created in rows}
