"""The worker's end of a run (``store._finish``): its answer pinned as written, the denial asked with
the row lock, and the same outcome and audit record as when both were read on their own."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agent import events as ev
from agent.providers.types import Usage
from chatapp.audit.chain import digest
from chatapp.audit.log import describe
from chatapp.event_codec import event_payload, event_type
from chatapp.event_log import Sequence
from chatapp.models import AuditEvent, Message, Run, ToolCall
from chatapp.worker.lease import acquire_lease
from chatapp.worker.store import DurableItem, persist_durable_batch
from tests.worker.scenario import new_run

pytestmark = pytest.mark.django_db


def _finish(run: Run, text: str = "The answer.") -> list[str]:
    """Store the run's end as the worker does; returns the statements it sent."""
    owner = acquire_lease(run.pk)
    seqs = Sequence(Run.objects.get(pk=run.pk).last_seq, owner)
    event = ev.RunFinished(text, Usage(prompt_tokens=3, completion_tokens=2))
    item = DurableItem(seqs.next(), event_type(event), event_payload(event), event, {})
    with CaptureQueriesContext(connection) as queries:
        persist_durable_batch(run.pk, [item], owner, seqs)
    return [q["sql"] for q in queries.captured_queries]


def _reads_from(table: str, sql: list[str]) -> list[str]:
    """The SELECTs that read ``table`` itself: a join to it, or a subquery of it, in another table's
    read is not one."""
    return [s for s in sql if s.lstrip().upper().startswith("SELECT") and f' FROM "{table}"' in _top_level(s)]


def _top_level(statement: str) -> str:
    while True:  # parenthesised parts (subqueries, EXISTS, IN lists) out, innermost first
        shorter = re.sub(r"\([^()]*\)", "", statement)
        if shorter == statement:
            return statement
        statement = shorter


def _call(run: Run, status: str, error_code: str = "") -> None:
    ToolCall.objects.create(
        run=run,
        round_index=0,
        index=0,
        call_id="c1",
        name="send_message",
        status=status,
        error_code=error_code,
    )


def test_the_answer_is_pinned_as_written_and_the_denial_asked_with_the_lock(cast):
    run = new_run(cast["alice"])
    sql = _finish(run)
    run.refresh_from_db()
    assert run.status == "succeeded"
    # Neither the answer just written nor the run's calls are read by a statement of their own: the
    # denial, and whether a call still waits for a decision, are asked inside the run's locked read;
    # with none waiting, their locked read is skipped (session 15; run_lifecycle.py).
    assert not _reads_from("chatapp_message", sql)
    assert not _reads_from("chatapp_toolcall", sql)
    assert [s for s in _reads_from("chatapp_run", sql) if s.count("chatapp_toolcall") >= 2]
    # The chain pinned the answer the table holds: the content check reading it back agrees.
    record = AuditEvent.objects.filter(kind="run_finished", run_id=run.pk).get()
    stored = list(Message.objects.filter(run=run, role="assistant").values_list("content", flat=True))
    assert stored == ["The answer."]
    assert record.payload["answer_sha256"] == digest(stored) == describe(run, as_stored=True)["answer_sha256"]


@pytest.mark.parametrize(
    ("call_status", "error_code", "outcome"),
    [("denied", "denied", "denied"), ("denied", "run_ended", "succeeded"), ("succeeded", "", "succeeded")],
)
def test_a_denied_call_still_makes_the_run_denied(cast, call_status, error_code, outcome):
    run = new_run(cast["alice"])
    _call(run, call_status, error_code)
    _finish(run)
    run.refresh_from_db()
    assert run.status == outcome


def test_a_failure_with_no_text_pins_no_answer_without_reading(cast):
    run = new_run(cast["alice"])
    owner = acquire_lease(run.pk)
    seqs = Sequence(Run.objects.get(pk=run.pk).last_seq, owner)
    event = ev.RunFailed("ProviderError", "the model went away", "upstream")
    item = DurableItem(seqs.next(), event_type(event), event_payload(event), event, {"partial_text": ""})
    with CaptureQueriesContext(connection) as queries:
        persist_durable_batch(run.pk, [item], owner, seqs)
    run.refresh_from_db()
    assert run.status == "failed"
    assert not _reads_from("chatapp_message", [q["sql"] for q in queries.captured_queries])
    record = AuditEvent.objects.filter(kind="run_finished", run_id=run.pk).get()
    assert record.payload["answer_sha256"] == digest([]) == describe(run, as_stored=True)["answer_sha256"]


@pytest.mark.parametrize(
    ("status", "error_code", "closed_as"),
    [("awaiting_approval", "", "denied"), ("approved", "sign_in_required", "failed")],
)
def test_a_call_still_undecided_is_read_with_its_lock_and_closed(cast, status, error_code, closed_as):
    run = new_run(cast["alice"])
    _call(run, status, error_code)
    sql = _finish(run)
    assert len(_reads_from("chatapp_toolcall", sql)) == 1  # the locked read the annotation asked for
    call = ToolCall.objects.get(run=run)
    assert (call.status, call.error_code) == (closed_as, "run_ended")
    assert Run.objects.get(pk=run.pk).status == "succeeded"
