"""A reconnecting client gets the frames it lacks, however many it already holds (chatapp/event_log.py)."""

from __future__ import annotations

import json

import pytest

from chatapp.consumers import MAX_RESUMED_RUNS, BadRequest, parse_resume
from chatapp.event_log import stored_frames
from chatapp.models import Conversation, Message, Run, RunEvent

pytestmark = pytest.mark.django_db


def _run_with_frames(owner, count: int) -> Run:
    convo = Conversation.objects.create(owner=owner)
    message = Message.objects.create(conversation=convo, role=Message.Role.USER, content="q")
    run = Run.objects.create(conversation=convo, user_message=message, provider_name="demo", model="m")
    RunEvent.objects.bulk_create(
        RunEvent(run=run, seq=seq, type="delta", payload={"text": f"{seq} "}) for seq in range(1, count + 1)
    )
    return run


def test_a_client_holding_more_than_the_replay_limit_gets_the_frames_it_lacks(cast):
    run = _run_with_frames(cast["alice"], 30)
    # The client has 1..25 and the replay is limited to 10 frames: it must get 26..30, not 1..10
    # filtered down to nothing (which left a client that lost the end of a long answer waiting forever).
    frames = stored_frames(run.conversation_id, {run.pk: 25}, run.pk, limit=10)
    assert [f["seq"] for f in frames] == [26, 27, 28, 29, 30]


def test_the_limit_counts_only_frames_the_client_lacks(cast):
    run = _run_with_frames(cast["alice"], 30)
    frames = stored_frames(run.conversation_id, {run.pk: 5}, run.pk, limit=10)
    assert [f["seq"] for f in frames] == list(range(6, 16))


def test_a_resume_naming_too_many_runs_is_refused_with_the_reason():
    many = {str(n): 0 for n in range(1, MAX_RESUMED_RUNS + 2)}
    with pytest.raises(BadRequest, match=f"more than {MAX_RESUMED_RUNS} runs"):
        parse_resume(json.dumps({"resume": many}))
    assert parse_resume(json.dumps({"resume": {"1": 3}, "since_run": 1})) == ({1: 3}, 1)
