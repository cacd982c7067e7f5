"""Approving or denying a tool call that waits for an admin (R-TOOL-2, R-RUN-3).

One code path for the admin, the approval page and ``manage.py approvals``. The decision is taken
under a row lock, so two admins or a double click give exactly one decision and one resume; the
resume task is enqueued only after the decision is committed. A run waiting for approval holds no
worker: deciding the last pending call of a run puts it back in the queue.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils.translation import gettext as _

from chatapp import event_log, frames
from chatapp.audit import record
from chatapp.frames import Kind
from chatapp.models import Approval, Run, ToolCall
from chatapp.services import policies
from chatapp.services.approval_feed import Change, changed_on_commit
from chatapp.services.dispatch import enqueue_on_commit
from chatapp.services.errors import ChatError
from chatapp.services.run_lifecycle import move_locked
from chatapp.status_words import word


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


def _undecided() -> QuerySet[ToolCall]:
    return ToolCall.objects.filter(
        status=ToolCall.Status.AWAITING_APPROVAL,
        approval__isnull=True,
        run__status=Run.Status.AWAITING_APPROVAL,
    )


def pending() -> list[ToolCall]:
    """The approvers' queue: undecided calls whose policy asks an admin, oldest first. Calls whose
    policy asks the user (the chat's Allow once / Deny) are the user's to answer, not the queue's."""
    rules = policies.load_rules()
    calls = _undecided().select_related("run__conversation__owner").order_by("created_at")
    return [call for call in calls if approver_for(call.name, rules) == "admin"]


def pending_ids() -> list[int]:
    rules = policies.load_rules()
    rows = _undecided().values_list("pk", "name")
    return [pk for pk, name in rows if approver_for(name, rules) == "admin"]


def summary() -> dict[str, Any]:
    """What an approver's page shows and notifies: how many calls wait, and the newest of them (named
    in a browser notification). The badge's poll (``/approvals/count/``) and the live feed
    (``approval_feed``) send this same body."""
    from django.urls import reverse

    calls = pending()
    latest = calls[-1] if calls else None
    body: dict[str, Any] = {"pending": len(calls), "latest": None}
    if latest is not None:
        body["latest"] = {
            "id": latest.pk,
            "name": latest.name,
            "user": latest.run.conversation.owner.get_username(),
            "url": reverse("admin:chatapp_toolcall_change", args=[latest.pk]),
        }
    return body


def pending_count() -> int:
    """What the approvers' badge shows: the same calls as ``pending()``, counted (one query for the
    names, one for the rules; the waiting calls are few: one active run per conversation)."""
    return len(pending_ids())


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
            _(
                "%(user)s may not approve tool calls "
                "(it takes staff status and the permission approve_toolcall)."
            )
            % {"user": user.get_username()}
        )
    rule = policies.match(policies.load_rules(), call.name)
    if owner_id == user.pk and call.risk == "high" and not (rule and rule.allow_self_approval):
        raise ApprovalRefused(_("You cannot approve a high-risk call made in your own conversation."))


def decide(call_pk: int, user: Any, *, approve: bool, reason: str = "") -> Approval:
    with transaction.atomic():
        call = ToolCall.objects.select_for_update().select_related("run__conversation").get(pk=call_pk)
        run = Run.objects.select_for_update().get(pk=call.run_id)
        _check_person(user, call)
        if (
            call.status != ToolCall.Status.AWAITING_APPROVAL
            or Approval.objects.filter(tool_call=call).exists()
        ):
            raise AlreadyDecided(
                _("This call was already decided (it is %(state)s).") % {"state": word(call.status)}
            )
        if run.status != Run.Status.AWAITING_APPROVAL:
            raise AlreadyDecided(
                _("The run is %(state)s; there is nothing left to decide.") % {"state": word(run.status)}
            )
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
        seqs = event_log.Sequence.after_stored(run.pk)  # under the run's row lock
        decided = event_log.append(
            run.pk,
            seqs.next(),
            Kind.APPROVAL_DECIDED,
            {
                "call_id": call.call_id,
                "name": call.name,
                "decision": decision,
                "by": user.get_username(),
                "reason": approval.reason,
                "round_index": call.round_index,
                "index": call.index,
            },
            durable=True,
        )
        frames.publish_on_commit(run.conversation_id, [decided])
        still_waiting = run.tool_calls.filter(status=ToolCall.Status.AWAITING_APPROVAL).exists()
        if not still_waiting and run.status == Run.Status.AWAITING_APPROVAL and not run.cancel_requested:
            # A clean pause is not a crash: the resumed run starts its poison count afresh. Done here,
            # under the run's lock, because the paused segment's release_lease may not have run yet.
            # The move announces the queue's change to the approvers (run_lifecycle).
            move_locked(run, Run.Status.QUEUED, seqs=seqs, actor=user.get_username(), deliveries=0)
            enqueue_on_commit(run.pk)
        else:
            changed_on_commit(Change.DECIDED)  # the run still waits: one call fewer in the queue
    return approval
