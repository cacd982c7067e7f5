"""The marks of a run's start (chatapp/worker/start_spans.py): logged once per delivery, as the first
round's request leaves, in a form the browser bench reads back."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from agent import events as ev
from bench.browser.spans import MARKS, split
from chatapp.models import Conversation, Run
from chatapp.worker.recorder import RunRecorder
from chatapp.worker.start_spans import ORDER, StartSpans, parse

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")
LEASE = "worker-a:1"


def test_the_bench_reads_the_marks_the_worker_writes():
    assert tuple(MARKS) == ORDER
    spans = StartSpans(7)
    spans.mark("committed", 100.0)
    spans.mark("committed", 200.0)  # the first mark of a name stands
    spans.mark("received", 100.004)
    line = "2026-12-01 08:00:00,000 INFO clearloop.start start spans " + '{"run": 7, "committed": 100.0}'
    assert parse(line) == {"run": 7, "committed": 100.0}
    assert parse("INFO celery something else") is None
    batches = [[{"rid": "r", "run_id": 7, "t_post": 99.99}]]
    parts = split(batches, {"r": {"recv": 100.01}}, {7: dict(spans.marks)})
    assert parts["runs"] == 1
    assert [round(v, 3) for v in parts["p50_ms"].values()] == [10.0, 4.0, 6.0]
    assert list(parts["p50_ms"]) == ["committed", "received", "upstream"]


async def test_the_first_round_started_reports_the_marks_once(cast, runtime, caplog):
    convo = await Conversation.objects.acreate(owner=cast["alice"])
    run = await Run.objects.acreate(
        conversation=convo,
        provider_name="demo",
        model="m",
        status=Run.Status.RUNNING,
        lease_owner=LEASE,
        lease_expires_at=timezone.now() + timedelta(minutes=5),
    )
    caplog.set_level(logging.INFO, logger="clearloop.start")
    async with RunRecorder(runtime, run.pk, convo.pk, 0, 60_000, LEASE) as recorder:
        recorder.spans.mark("agent")
        await recorder.emit(ev.RoundStarted(round_index=0, kind="normal", model="m", provider="demo"))
        await recorder.emit(ev.RoundStarted(round_index=1, kind="normal", model="m", provider="demo"))
    reported = [parse(r.getMessage()) for r in caplog.records if r.name == "clearloop.start"]
    assert len(reported) == 1
    marks = reported[0]
    assert marks["run"] == run.pk
    assert marks["agent"] <= marks["prepared"] <= marks["request"]
