"""A call's bar starts when the engine started it, not when its row was stored (views/timeline.py):
on a busy worker the second of two parallel calls can be stored after the first has ended, and the
waterfall then drew two parallel reads one after the other."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from chatapp.models import Conversation, Message, Run, RunEvent
from chatapp.views.timeline import timeline

pytestmark = pytest.mark.django_db


def test_a_call_stored_late_starts_where_the_engine_started_it(cast):
    convo = Conversation.objects.create(owner=cast["alice"])
    message = Message.objects.create(conversation=convo, role=Message.Role.USER, content="q")
    run = Run.objects.create(conversation=convo, user_message=message, provider_name="demo", model="m")
    t0 = timezone.now()
    engine_start = (t0 + timedelta(milliseconds=10)).timestamp()
    rows = [
        # (seq, type, payload, stored at ms)
        (1, "round_started", {"round_index": 0}, 0),
        (2, "tool_call", {"round_index": 0, "call_id": "a", "name": "read_file", "status": "running",
                          "started_at": engine_start}, 12),
        (3, "tool_call", {"round_index": 0, "call_id": "a", "name": "read_file", "status": "succeeded",
                          "duration_ms": 5}, 120),
        (4, "tool_call", {"round_index": 0, "call_id": "b", "name": "search_files", "status": "running",
                          "started_at": engine_start}, 165),
        (5, "tool_call", {"round_index": 0, "call_id": "b", "name": "search_files", "status": "succeeded",
                          "duration_ms": 5}, 200),
        # A row from before ``started_at`` existed starts where it was stored.
        (6, "tool_call", {"round_index": 0, "call_id": "c", "name": "write_file", "status": "running"}, 210),
    ]
    for seq, kind, payload, stored_ms in rows:
        event = RunEvent.objects.create(run=run, seq=seq, type=kind, payload=payload, durable=True)
        RunEvent.objects.filter(pk=event.pk).update(created_at=t0 + timedelta(milliseconds=stored_ms))
    calls = {r["label"]: r for r in timeline(run)["rows"] if r["kind"] == "call"}
    read, search = calls["read_file"], calls["search_files"]
    assert read["start"] == search["start"] == 10.0
    assert search["start"] < read["end"] == 120.0  # drawn overlapping, as they ran
    assert calls["write_file"]["start"] == 210.0
