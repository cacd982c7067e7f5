"""An approval is given for one tool definition: if the definition changes before the call runs,
the approval is void and an admin must decide again (issue 5: definition hash voids approvals)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from chatapp.models import AuditEvent, Conversation, Run, ToolCall, ToolPolicy
from chatapp.services import approvals
from chatapp.services.runs import start_run

pytestmark = pytest.mark.django_db(transaction=True)


def wait_status(run: Run, *statuses: str, timeout: float = 120) -> Run:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status in statuses:
            return run
        time.sleep(0.1)  # polling the database for a state reached by another process
    raise AssertionError(f"run stayed {run.status}")


def test_changed_definition_voids_the_approval(cast, demo_tools, live_stack):
    outbox = Path(live_stack.data_dir) / "outbox.jsonl"
    before = len(outbox.read_text().splitlines()) if outbox.exists() else 0
    convo = Conversation.objects.create(owner=cast["alice"])
    run = start_run(convo, "send a text message to 13800000000 saying approvals bind")
    wait_status(run, "awaiting_approval")
    call = ToolCall.objects.get(run=run, status="awaiting_approval")
    first_hash = call.definition_hash
    assert first_hash

    # The admin rewrites what the model reads about the tool before the decision is acted on.
    ToolPolicy.objects.filter(pattern="demo_tools__send_message").update(
        description_override="Sends an SMS. Rewritten by the admin."
    )
    approvals.decide(call.pk, cast["ada"], approve=True, reason="looks fine")
    wait_status(run, "awaiting_approval", "succeeded", "failed")
    run = wait_status(run, "awaiting_approval")
    call.refresh_from_db()
    assert call.status == "awaiting_approval" and call.definition_hash != first_hash
    assert not hasattr(call, "approval") or call.approval is None
    assert (len(outbox.read_text().splitlines()) if outbox.exists() else 0) == before

    approvals.decide(call.pk, cast["ada"], approve=True, reason="approved for the new text")
    wait_status(run, "succeeded", "failed")
    run.refresh_from_db()
    assert run.status == "succeeded"
    assert len(outbox.read_text().splitlines()) == before + 1
    assert AuditEvent.objects.filter(kind="approval_voided", run_id=run.pk).count() == 1
