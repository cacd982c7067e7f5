"""The sweep enqueues a queued run again when its message may be lost, not while it waits its turn.

Before, every queued run behind a backlog (more runs sent than the workers carry) was enqueued again
every ``RUN_QUEUED_GRACE_SECONDS`` by every worker: the queue filled with duplicates, each taking a
slot of a worker's capacity only to have its lease refused."""

from __future__ import annotations

import os
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from chatapp.models import Conversation, Run, WorkerBeat
from chatapp.worker.liveness import WORKER_ID, beat, held_by_live_workers
from chatapp.worker.sweep import BACKLOG_PATIENCE, Sweeper

pytestmark = pytest.mark.django_db(transaction=True)


def _queued(owner, seconds_ago: float) -> int:
    convo = Conversation.objects.create(owner=owner)
    run = Run.objects.create(conversation=convo, provider_name="demo", model="m", status=Run.Status.QUEUED)
    Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(seconds=seconds_ago))
    return run.pk


def _sweeper(backlog=lambda: 0, held=set) -> tuple[Sweeper, list[int]]:
    sent: list[int] = []
    return Sweeper(sent.append, backlog, held), sent


def test_a_lost_queued_run_is_enqueued_again_once_per_grace_period(cast, settings):
    settings.RUN_QUEUED_GRACE_SECONDS = 20
    lost = _queued(cast["alice"], 30)
    fresh = _queued(cast["bob"], 5)
    sweeper, sent = _sweeper()
    assert sweeper.sweep_once() == [lost] and sent == [lost]
    assert sweeper.sweep_once() == [] and fresh not in sent  # not again within the grace period


def test_behind_a_backlog_a_queued_run_waits_its_turn_until_it_has_waited_too_long(cast, settings):
    settings.RUN_QUEUED_GRACE_SECONDS = 20
    waiting = _queued(cast["alice"], 30)
    forgotten = _queued(cast["bob"], BACKLOG_PATIENCE * 20 + 5)
    sweeper, sent = _sweeper(backlog=lambda: 40)
    assert sweeper.sweep_once() == [forgotten] and sent == [forgotten]
    sweeper.backlog = lambda: 0  # the queue drained and the run is still queued: its message is lost
    assert sweeper.sweep_once() == [waiting]


def test_a_run_this_worker_holds_for_a_slot_is_not_lost(cast, settings):
    settings.RUN_QUEUED_GRACE_SECONDS = 20
    held = _queued(cast["alice"], 300)
    other = _queued(cast["bob"], 300)
    sweeper, sent = _sweeper(held=lambda: {held})
    assert sweeper.sweep_once() == [other] and sent == [other]


def test_a_beat_says_which_runs_its_worker_holds():
    beat(holding={7, 3})
    assert WorkerBeat.objects.get(pk=WORKER_ID).holding == [3, 7]
    assert held_by_live_workers() == {3, 7}
    beat(holding=())
    assert WorkerBeat.objects.get(pk=WORKER_ID).holding == []
    assert held_by_live_workers() == set()


def test_a_run_another_live_worker_holds_is_not_lost_until_that_worker_stops_beating(cast, settings):
    """With several workers, a run one of them holds for a slot looked lost to the others' sweeps (it
    is queued, out of the broker's list, and not in their own hands) and was enqueued again."""
    settings.RUN_QUEUED_GRACE_SECONDS = 20
    theirs = _queued(cast["alice"], 300)
    lost = _queued(cast["bob"], 300)
    now = timezone.now()
    other = WorkerBeat.objects.create(
        worker_id="other-host:1:abcd", queue=settings.CELERY_TASK_DEFAULT_QUEUE, started_at=now, beat_at=now
    )
    other.holding = [theirs]
    other.save()
    WorkerBeat.objects.create(  # a worker of the previous release (no such column then): holds nothing
        worker_id="old-release:1:abcd",
        queue=settings.CELERY_TASK_DEFAULT_QUEUE,
        started_at=now,
        beat_at=now,
        holding=None,
    )
    WorkerBeat.objects.create(  # another deployment's worker sharing the database holds nothing of ours
        worker_id="elsewhere:1:abcd", queue="another-queue", started_at=now, beat_at=now, holding=[lost]
    )
    sweeper, sent = _sweeper(held=held_by_live_workers)
    assert sweeper.sweep_once() == [lost] and sent == [lost]
    dead = now - timedelta(seconds=settings.WORKER_DEAD_SECONDS + 1)
    WorkerBeat.objects.filter(pk=other.pk).update(beat_at=dead)
    assert sweeper.sweep_once() == [theirs]  # its worker died holding it: the message went with it


def test_a_broker_that_cannot_be_asked_counts_as_no_backlog(cast, settings):
    settings.RUN_QUEUED_GRACE_SECONDS = 20
    lost = _queued(cast["alice"], 30)

    def broken() -> int:
        raise ConnectionError("the broker is away")

    sweeper, sent = _sweeper(backlog=broken)
    assert sweeper.sweep_once() == [lost]


@pytest.mark.live
@pytest.mark.skipif(not os.environ.get("REDIS_URL", "").startswith("redis"), reason="needs the Redis broker")
def test_the_backlog_is_the_number_of_messages_in_the_run_queue(settings):
    from chatapp.celery import app
    from chatapp.worker.backlog import run_queue_backlog

    settings.CELERY_TASK_DEFAULT_QUEUE = f"backlog-test-{uuid.uuid4().hex[:8]}"  # no worker reads it
    assert run_queue_backlog() == 0  # Redis has no list for an empty queue
    with app.connection_for_write() as conn:
        queue = conn.SimpleQueue(settings.CELERY_TASK_DEFAULT_QUEUE)
        try:
            for n in range(3):
                queue.put({"n": n})
            assert run_queue_backlog() == 3
            queue.get(timeout=5).ack()
            assert run_queue_backlog() == 2
        finally:
            queue.clear()
            queue.close()
