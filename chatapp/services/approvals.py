"""Approving or denying a tool call that waits for an admin (R-TOOL-2, R-RUN-3).

One code path for the admin, the approval page and ``manage.py approvals``. The decision is taken
under a row lock, so two admins or a double click give exactly one decision and one resume; the
resume task is enqueued only after the decision is committed. A run waiting for approval holds no
worker: deciding the last pending call of a run puts it back in the queue.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models import Max

from chatapp.audit import record
from chatapp.models import Approval, Run, RunEvent, ToolCall
from chatapp.services import policies
from chatapp.services.dispatch import enqueue_on_commit
from chatapp.services.errors import ChatError


class ApprovalRefused(ChatError):
    """This person may not decide this call."""


class AlreadyDecided(ChatError):
    pass


def may_approve(user: Any) -> bool:
    """The documented rule, for the admin, the approval page and the CLI alike: staff status and the
    ``approve_toolcall`` permission (issue 16, L13: the CLI used to skip the staff check)."""
    return bool(
        user.is_authenticated
        and user.is_active
        and user.is_staff
        and user.has_perm("chatapp.approve_toolcall")
    )


def pending() -> list[ToolCall]:
    return list(
        ToolCall.objects.filter(
            status=ToolCall.Status.AWAITING_APPROVAL,
            approval__isnull=True,
            run__status=Run.Status.AWAITING_APPROVAL,
        )
        .select_related("run__conversation__owner")
        .order_by("created_at")
    )


def pending_count() -> int:
    """What the approvers' badge shows: the same calls as ``pending()``, counted."""
    return ToolCall.objects.filter(
        status=ToolCall.Status.AWAITING_APPROVAL,
        approval__isnull=True,
        run__status=Run.Status.AWAITING_APPROVAL,
    ).count()


def approver_for(name: str, rules: list | None = None) -> str:
    """Who decides this tool's calls: "admin" (the queue) or "user" (the chat's Allow once / Deny)."""
    rule = policies.match(rules if rules is not None else policies.load_rules(), name)
    return rule.approver if rule else "admin"


def _check_person(user: Any, call: ToolCall) -> None:
    owner_id = call.run.conversation.owner_id
    if approver_for(call.name) == "user" and user.pk == owner_id:
        return  # the policy asks the person in the chat; recorded as their Approval like any other
    if not may_approve(user):
        raise ApprovalRefused(
            f"{user.get_username()} may not approve tool calls "
            "(it takes staff status and the permission approve_toolcall)."
        )
    rule = policies.match(policies.load_rules(), call.name)
    if owner_id == user.pk and call.risk == "high" and not (rule and rule.allow_self_approval):
        raise ApprovalRefused("You cannot approve a high-risk call made in your own conversation.")


def decide(call_pk: int, user: Any, *, approve: bool, reason: str = "") -> Approval:
    with transaction.atomic():
        call = ToolCall.objects.select_for_update().select_related("run__conversation").get(pk=call_pk)
        run = Run.objects.select_for_update().get(pk=call.run_id)
        _check_person(user, call)
        if (
            call.status != ToolCall.Status.AWAITING_APPROVAL
            or Approval.objects.filter(tool_call=call).exists()
        ):
            raise AlreadyDecided(f"This call was already decided (it is {call.status}).")
        if run.status != Run.Status.AWAITING_APPROVAL:
            raise AlreadyDecided(f"The run is {run.status}; there is nothing left to decide.")
        decision = Approval.Decision.APPROVED if approve else Approval.Decision.DENIED
        approval = Approval.objects.create(
            tool_call=call,
            decision=decision,
            decided_by=user,
            reason=reason.strip(),
            definition_hash=call.definition_hash,
        )
        call.status = ToolCall.Status.APPROVED if approve else ToolCall.Status.DENIED
        call.save(update_fields=["status", "updated_at"])
        record("approval", run_id=run.pk, actor=user.get_username(), subject=approval)
        frame = _append_event(
            run,
            "approval_decided",
            {
                "call_id": call.call_id,
                "name": call.name,
                "decision": decision,
                "by": user.get_username(),
                "reason": approval.reason,
                "round_index": call.round_index,
                "index": call.index,
            },
        )
        still_waiting = run.tool_calls.filter(status=ToolCall.Status.AWAITING_APPROVAL).exists()
        if not still_waiting and run.status == Run.Status.AWAITING_APPROVAL and not run.cancel_requested:
            run.status = Run.Status.QUEUED
            # A clean pause is not a crash: the resumed run starts its poison count afresh. Done here,
            # under the run's lock, because the paused segment's release_lease may not have run yet.
            run.deliveries = 0
            run.save(update_fields=["status", "deliveries"])
            enqueue_on_commit(run.pk)
        transaction.on_commit(lambda: publish(run.conversation_id, frame))
    return approval


def _append_event(run: Run, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """An event written by the web side; the run row is locked, and no worker holds this run."""
    seq = max(run.last_seq, RunEvent.objects.filter(run=run).aggregate(m=Max("seq"))["m"] or 0) + 1
    RunEvent.objects.create(run=run, seq=seq, type=kind, payload=payload, durable=True)
    Run.objects.filter(pk=run.pk).update(last_seq=seq)
    return {"run": run.pk, "seq": seq, "type": kind, "data": payload}


def publish(conversation_id: int, frame: dict[str, Any]) -> None:
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    try:
        async_to_sync(get_channel_layer().group_send)(
            f"conversation.{conversation_id}", {"type": "run.frame", "frame": frame}
        )
    except Exception:  # noqa: BLE001 - the frame is stored; clients back-fill on reconnect
        logging.getLogger(__name__).warning("publishing a frame failed", exc_info=True)


def void_stale_approvals(run_id: int, current_hashes: dict[str, str | None]) -> list[str]:
    """Approvals given for a tool definition that has changed since are void: ask again.

    Called by the worker before it executes approved calls. The approval is removed (the audit log
    keeps it, with the reason it was voided) and the call waits for a new decision.
    """
    from chatapp.audit.log import record

    voided = []
    calls = ToolCall.objects.filter(run_id=run_id, status=ToolCall.Status.APPROVED, approval__isnull=False)
    for call in calls.select_related("approval__decided_by"):
        now = current_hashes.get(call.name)
        then = call.approval.definition_hash
        if not (now and then) or now == then:
            continue
        with transaction.atomic():
            record(
                "approval_voided",
                run_id=run_id,
                payload={
                    "call_id": call.call_id,
                    "tool": call.name,
                    "approved_by": call.approval.decided_by.get_username(),
                    "approved_hash": then,
                    "current_hash": now,
                    "reason": "the tool's definition changed",
                },
            )
            call.approval.delete()
            ToolCall.objects.filter(pk=call.pk).update(
                status=ToolCall.Status.AWAITING_APPROVAL, definition_hash=now
            )
        voided.append(call.call_id)
    return voided
