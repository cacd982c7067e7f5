"""Every recorded change writes its audit event in the same transaction as the change."""

from __future__ import annotations

import pytest

from agent import events as ev
from agent.providers.types import AssembledResponse, AssembledToolCall, ChoiceResult, Usage
from chatapp.audit import verify_chain
from chatapp.audit.chain import digest
from chatapp.models import AuditEvent, Conversation, Round, Run, ToolCall
from chatapp.services import approvals
from chatapp.services.runs import request_cancel, start_run
from chatapp.worker.lease import acquire_lease
from chatapp.worker.store import persist_durable

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(cast, django_capture_on_commit_callbacks):
    convo = Conversation.objects.create(owner=cast["alice"])
    with django_capture_on_commit_callbacks(execute=False):
        return start_run(convo, "what is in the workspace?")


def _round(run_id: int, seq: int) -> None:
    call = AssembledToolCall(id="call_1", name="list_files", arguments_raw="{}", arguments={})
    choice = ChoiceResult(0, "", "", (call,), "tool_calls", "tool_calls")
    usage = Usage(prompt_tokens=10, completion_tokens=3, total_tokens=13)
    response = AssembledResponse((choice,), usage, response_id="resp-1", model="demo-model")
    request = {"model": "demo-model", "headers": {"Authorization": "Bearer sk-test-abcdefghijklmnopqrstu"}}
    event = ev.RoundFinished(
        0, "normal", "demo", "demo-model", request, response, "tool_calls", "tool_calls", usage, 5.0, 20.0
    )
    persist_durable(run_id, seq, "round_finished", {}, event)


def test_starting_a_run_records_run_created_by_its_owner(run):
    row = AuditEvent.objects.get(kind="run_created")
    assert (row.actor, row.run_id) == ("alice", run.pk)
    assert row.payload["status"] == "queued" and row.payload["provider"] == run.provider_name
    assert row.payload["user_message_id"] == run.user_message_id


def test_a_stored_round_pins_the_redacted_request_and_response(run):
    _round(run.pk, 1)
    row = AuditEvent.objects.get(kind="round_stored")
    stored = Round.objects.get(run=run, index=0)
    assert row.actor == "system" and row.run_id == run.pk
    assert row.payload["round_index"] == 0 and row.payload["finish_reason"] == "tool_calls"
    assert row.payload["request_sha256"] == digest(stored.request)
    assert row.payload["response_sha256"] == digest(stored.response)
    assert "sk-test" not in str(row.payload)


def test_each_tool_call_status_change_is_recorded(run):
    _round(run.pk, 1)
    for seq, status in enumerate(("proposed", "running", "succeeded"), start=2):
        event = ev.ToolCallChanged(
            0, 0, "call_1", "list_files", "{}", status, result="[]" if seq == 4 else None
        )
        persist_durable(run.pk, seq, "tool_call", {}, event)
    rows = AuditEvent.objects.filter(kind="tool_call_status").order_by("seq")
    assert [r.payload["status"] for r in rows] == ["proposed", "running", "succeeded"]
    assert rows.last().payload["result_sha256"] == digest(ToolCall.objects.get(run=run).result)


def test_a_finished_run_and_a_failed_run_are_recorded(run, cast, django_capture_on_commit_callbacks):
    acquire_lease(run.pk)
    assert AuditEvent.objects.get(kind="run_status", run_id=run.pk).payload["status"] == "running"
    persist_durable(run.pk, 2, "run_finished", {}, ev.RunFinished("done", Usage()))
    finished = AuditEvent.objects.get(kind="run_finished", run_id=run.pk)
    assert finished.payload["status"] == "succeeded"
    assert finished.payload["final_text_sha256"] == digest("done")

    convo = Conversation.objects.create(owner=cast["alice"])
    with django_capture_on_commit_callbacks(execute=False):
        other = start_run(convo, "again")
    acquire_lease(other.pk)
    persist_durable(other.pk, 2, "run_failed", {}, ev.RunFailed("ProviderError", "upstream 500"))
    failed = AuditEvent.objects.get(kind="run_finished", run_id=other.pk)
    assert failed.payload["status"] == "failed" and failed.payload["error_class"] == "ProviderError"
    assert verify_chain().ok


def test_cancelling_a_queued_run_is_recorded(run):
    request_cancel(run)
    assert AuditEvent.objects.get(kind="run_finished", run_id=run.pk).payload["status"] == "cancelled"


def test_an_approval_is_recorded_with_who_and_why(run, cast, django_capture_on_commit_callbacks):
    Run.objects.filter(pk=run.pk).update(status="awaiting_approval")
    call = ToolCall.objects.create(
        run=run,
        round_index=0,
        index=0,
        call_id="call_9",
        name="write_file",
        status="awaiting_approval",
        risk="high",
    )
    with django_capture_on_commit_callbacks(execute=False):
        approvals.decide(call.pk, cast["ada"], approve=False, reason="not today")
    row = AuditEvent.objects.get(kind="approval")
    assert (row.actor, row.run_id) == ("ada", run.pk)
    assert row.payload["decision"] == "denied" and row.payload["reason"] == "not today"
    assert row.payload["call_id"] == "call_9" and row.payload["name"] == "write_file"


def test_a_refused_change_leaves_no_audit_event(run, cast):
    call = ToolCall.objects.create(
        run=run,
        round_index=0,
        index=0,
        call_id="call_9",
        name="write_file",
        status="awaiting_approval",
        risk="high",
    )
    before = AuditEvent.objects.count()
    with pytest.raises(approvals.ApprovalRefused):
        approvals.decide(call.pk, cast["otto"], approve=True)  # auditors may not approve
    assert AuditEvent.objects.count() == before


def test_secrets_never_enter_the_chain(cast):
    from chatapp.audit import record

    row = record("export", actor="otto", payload={"filter": {"q": "sk-test-abcdefghijklmnopqrstuv"}})
    assert row.payload == {"filter": {"q": "[REDACTED]"}}
    assert verify_chain().ok
