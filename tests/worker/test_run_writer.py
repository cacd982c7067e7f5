"""A run's frames are numbered after the last one stored and written under the run's lease: a worker
that lost the lease stores nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agent import events as ev
from chatapp.models import Conversation, Run, RunEvent
from chatapp.worker.run_writer import RunWriter
from chatapp.worker.store import LeaseLost
from tests.worker.stand_ins import listen, received

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")  # live frames use "deltas"
LEASE = "worker-a:1"


@pytest.fixture
def run(cast):
    convo = Conversation.objects.create(owner=cast["alice"])
    return Run.objects.create(
        conversation=convo,
        provider_name="demo",
        model="m",
        status=Run.Status.RUNNING,
        lease_owner=LEASE,
        lease_expires_at=timezone.now() + timedelta(minutes=5),
        last_seq=4,
    )


def rows(run):
    return list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", "type", "durable"))


async def test_live_and_durable_frames_are_numbered_after_the_last_stored(run, layer, runtime):
    group = f"conversation.{run.conversation_id}"
    channel = await listen(layer, group)
    writer = RunWriter(runtime, run.pk, group, run.last_seq, LEASE)
    assert await writer.live("delta", {"round_index": 0, "text": "hi"}) == 5
    stored = await writer.durable(ev.ContextCompressed(round_index=0, step="trim"), {})
    assert (stored.seq, stored.kind, stored.moved) == (6, "context_compressed", [])
    # The live frame is published by the cross-run batch; the durable one is the caller's to publish.
    assert [f["seq"] for f in await received(layer, channel, 1)] == [5]
    assert await runtime.db(rows, run) == [(5, "delta", False), (6, "context_compressed", True)]
    await runtime.db(run.refresh_from_db)
    assert run.last_seq == 6  # durable rows move it; live ones do not


async def test_a_durable_event_that_ends_the_run_returns_the_status_move(run, runtime):
    writer = RunWriter(runtime, run.pk, "g", run.last_seq, LEASE)
    stored = await writer.durable(ev.RunFailed("Boom", "it broke", "internal"), {"partial_text": "Hel"})
    assert stored.seq == 5
    assert [(f["seq"], f["type"], f["data"]["status"]) for f in stored.moved] == [(6, "status", "failed")]


async def test_a_writer_whose_lease_was_taken_stores_nothing(run, runtime):
    await runtime.db(taken_by_another_worker, run.pk)
    writer = RunWriter(runtime, run.pk, "g", run.last_seq, LEASE)
    with pytest.raises(LeaseLost):
        await writer.durable(ev.ContextCompressed(round_index=0, step="trim"), {})
    assert await runtime.db(rows, run) == []


def taken_by_another_worker(run_id):
    Run.objects.filter(pk=run_id).update(lease_owner="worker-b:1")
