"""M7 and item 5 (issue 16): verify_audit recomputes the digests the chain pins and names the edited row;
an anchor kept outside the database catches deleted tail rows; PostgreSQL refuses TRUNCATE."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext

from chatapp.audit import record, verify_chain
from chatapp.models import Approval, AuditEvent, Message, Round, ToolCall
from tests.audit.conftest import make_run, needs_postgres

pytestmark = pytest.mark.django_db


@pytest.fixture
def audited(cast):
    """A run with a round, a sent message and its approval, each pinned in the chain as the app does."""
    run = make_run(cast["alice"], tools=(("send_message", '{"phone_number": "13800000000", "content": "hi"}',
                                          '{"ok": true}'),), approver=cast["ada"])
    record("run_created", run_id=run.pk, actor="alice", subject=run)
    record("round_stored", run_id=run.pk, subject=run.rounds.get())
    call = run.tool_calls.get()
    record("approval", run_id=run.pk, actor="ada", subject=call.approval)
    record("tool_call_status", run_id=run.pk, subject=call)
    record("run_finished", run_id=run.pk, subject=run)
    assert verify_chain().ok
    return run


def _sql(sql, params):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


@pytest.mark.parametrize(
    ("edit", "named", "field"),
    [
        (lambda r: ToolCall.objects.filter(run=r).update(arguments='{"content": "EDITED"}'), "tool call 0/0",
         "arguments_sha256"),
        (lambda r: ToolCall.objects.filter(run=r).update(result="edited result"), "tool call 0/0", "result_sha256"),
        (lambda r: Round.objects.filter(run=r).update(response={"choices": [{"text": "EDITED"}]}), "round 0",
         "response_sha256"),
        (lambda r: Message.objects.filter(run=r, role="assistant").update(content="EDITED ANSWER"), "run",
         "answer_sha256"),
        (lambda r: Approval.objects.filter(tool_call__run=r).update(reason="EDITED REASON"), "approval",
         "reason"),
        (lambda r: Round.objects.filter(run=r).update(request={"messages": [{"role": "user", "content": "X"}]}),
         "round 0", "request_sha256"),
        (lambda r: Approval.objects.filter(tool_call__run=r).update(decision="denied"), "approval", "decision"),
        (lambda r: Approval.objects.filter(tool_call__run=r).update(definition_hash="0" * 64), "approval",
         "definition_hash"),
    ],
    ids=["arguments", "result", "response", "answer", "approval-reason", "request", "approval-decision",
         "approval-definition"],
)
def test_an_edited_row_is_named_with_what_changed(audited, edit, named, field, capsys):
    edit(audited)
    result = verify_chain()
    assert not result.ok and result.broken.problem == "content_mismatch"
    assert named in result.broken.detail and field in result.broken.detail, result.broken.detail
    with pytest.raises(CommandError, match=f"BROKEN at seq {result.broken.seq}: content edited"):
        call_command("verify_audit")


def test_who_approved_is_pinned_too(audited, cast):
    Approval.objects.filter(tool_call__run=audited).update(decided_by=cast["otto"])
    result = verify_chain()
    assert not result.ok and "approval" in result.broken.detail and "actor" in result.broken.detail


def test_a_deleted_conversation_is_not_an_edit(audited):
    audited.conversation.delete()
    assert verify_chain().ok


def test_a_saved_anchor_catches_rows_deleted_from_the_tail(audited, tmp_path, capsys):
    anchors = tmp_path / "anchors.txt"
    call_command("verify_audit", save_anchor=str(anchors))
    head = AuditEvent.objects.order_by("-seq").first()
    assert anchors.read_text().split()[0] == f"{head.seq}:{head.hash}"
    call_command("verify_audit", anchor_file=str(anchors))  # unchanged: OK
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("ALTER TABLE chatapp_auditevent DISABLE TRIGGER chatapp_auditevent_append_only")
        cursor.execute("DELETE FROM chatapp_auditevent WHERE seq >= %s", [head.seq - 1])
        if connection.vendor == "postgresql":
            cursor.execute("ALTER TABLE chatapp_auditevent ENABLE TRIGGER chatapp_auditevent_append_only")
    with pytest.raises(CommandError, match=f"anchored seq {head.seq} is missing"):
        call_command("verify_audit", anchor_file=str(anchors))


@needs_postgres
def test_truncate_is_refused_on_postgresql(audited):
    with pytest.raises(DatabaseError, match="append-only: TRUNCATE refused"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("RESET clearloop.audit_truncate")  # the test process opts in; an attacker's would not
            cursor.execute("TRUNCATE chatapp_auditevent")
    assert AuditEvent.objects.count() == 5


def test_a_running_run_is_pinned_without_reading_answers_yet_an_answer_slipped_into_it_shows(cast):
    """A run that has not ended has no stored answer (they are written with its end), so its records
    pin none without a query; the content check still reads the table, so an answer inserted into a
    running run is named."""
    run = make_run(cast["alice"], status="running")
    Message.objects.filter(run=run, role="assistant").delete()
    with CaptureQueriesContext(connection) as pinned:
        record("run_created", run_id=run.pk, actor="alice", subject=run)
    assert not [q for q in pinned.captured_queries if "chatapp_message" in q["sql"] and "assistant" in q["sql"]]
    assert verify_chain().ok
    Message.objects.create(conversation=run.conversation, run=run, role="assistant", content="SLIPPED IN", payload={})
    result = verify_chain()
    assert not result.ok and "answer_sha256" in result.broken.detail, result
