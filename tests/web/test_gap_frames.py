"""Numbers a dead segment never wrote are filled before anyone else numbers frames (event_log.fill_gaps),
and the API's event stream never reads past a number that is still on its way (run_events)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from chatapp.event_log import fill_gaps, stored_frames
from chatapp.models import Conversation, Message, Run, RunEvent
from chatapp.services import run_events
from chatapp.worker.lease import acquire_lease

pytestmark = pytest.mark.django_db


def _run_with(owner, seqs: list[int], **fields) -> Run:
    convo = Conversation.objects.create(owner=owner)
    message = Message.objects.create(conversation=convo, role=Message.Role.USER, content="q")
    run = Run.objects.create(
        conversation=convo, user_message=message, provider_name="demo", model="m", **fields
    )
    RunEvent.objects.bulk_create(
        RunEvent(run=run, seq=seq, type="delta", payload={"text": f"{seq} "}) for seq in seqs
    )
    return run


def test_taking_a_dead_workers_run_fills_the_numbers_it_never_wrote(cast):
    expired = timezone.now() - timedelta(seconds=5)
    run = _run_with(
        cast["alice"], [1, 2, 4, 7], status="running", lease_owner="dead", lease_expires_at=expired, deliveries=1
    )
    acquire_lease(run.pk)
    rows = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", "type"))
    assert rows == [
        (1, "delta"), (2, "delta"), (3, "gap"), (4, "delta"), (5, "gap"), (6, "gap"), (7, "delta"), (8, "status")
    ]
    # A client that holds 1..2 is replayed the gap first, so it applies 4 onwards instead of holding them.
    assert [f["seq"] for f in stored_frames(run.conversation_id, {run.pk: 2}, run.pk, limit=10)] == [3, 4, 5, 6, 7, 8]


def test_without_a_missing_number_nothing_is_written(cast):
    run = _run_with(cast["alice"], [1, 2, 3])
    assert fill_gaps(run.pk) == 3
    assert RunEvent.objects.filter(run=run).count() == 3


def test_the_event_stream_stops_at_a_number_still_on_its_way(cast):
    run = _run_with(cast["alice"], [1, 2, 4], status="running")
    status, events = run_events._read(run.pk, 0)
    assert status == "running" and [e.seq for e in events] == [1, 2]
    assert run_events._read(run.pk, 2)[1] == []
    RunEvent.objects.create(run=run, seq=3, type="delta", payload={"text": "3 "})
    assert [e.seq for e in run_events._read(run.pk, 2)[1]] == [3, 4]


def test_a_finished_runs_events_are_read_whole(cast):
    run = _run_with(cast["alice"], [1, 2, 4], status="succeeded")
    assert [e.seq for e in run_events._read(run.pk, 0)[1]] == [1, 2, 4]
