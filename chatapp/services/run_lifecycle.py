"""A run's life cycle: the allowed moves of ``Run.status`` and the one function that makes them.

    queued ──▶ running ──▶ succeeded | denied | failed | cancelled
      │  ▲        │  ▲
      │  │        ▼  │ (redelivered: running again)
      │  └── awaiting_approval | awaiting_sign_in ──▶ cancelled | failed
      └──▶ cancelled | failed (stopped or poisoned before a worker took it)

Every writer of ``Run.status`` calls ``move_locked`` (or ``move``): taking the lease
(``worker/lease.py``), pausing for and finishing in the worker (``worker/store.py``), deciding the
last approval (``services/approvals.py``) and stopping a run nobody drives (``services/runs.py``).
``denied`` is a finished run one of whose tool calls was denied (by an approver, the user's "Deny" or a
policy): the model answered without the call, and the run says so in its own state everywhere (chat,
audit, API, admin), never ``succeeded`` (issue 12 item 2). The worker chooses it when the run finishes.
One move is, in the caller's transaction and under the run's row lock: the transition check (an
illegal one raises ``IllegalTransition``), the row update (a terminal move also stamps
``finished_at``, drops the lease and takes undecided calls out of the approval queue), one audit
record (``run_finished`` for a terminal move, ``run_status`` otherwise) and one ``status`` frame,
stored and published on commit; a move into or out of ``awaiting_approval`` also tells the
approvers' pages that the queue changed (``services/approval_feed.py``).
``tests/web/test_run_lifecycle.py`` checks the table and that no other module writes ``Run.status``.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from chatapp import event_log, frames
from chatapp.audit import SYSTEM, record
from chatapp.models import ACTIVE_STATUSES, TERMINAL_STATUSES, Run, ToolCall
from chatapp.nul import without_nul
from chatapp.row_update import update_columns
from chatapp.services.approval_feed import Change, changed_on_commit

Status = Run.Status

ALLOWED: dict[str, frozenset[str]] = {
    Status.QUEUED: frozenset({Status.RUNNING, Status.CANCELLED, Status.FAILED}),
    # running -> running: a redelivered run (its worker died) is taken again.
    Status.RUNNING: frozenset(
        {
            Status.RUNNING,
            Status.AWAITING_APPROVAL,
            Status.AWAITING_SIGN_IN,
            Status.SUCCEEDED,
            Status.DENIED,
            Status.FAILED,
            Status.CANCELLED,
        }
    ),
    Status.AWAITING_APPROVAL: frozenset({Status.QUEUED, Status.CANCELLED, Status.FAILED}),
    Status.AWAITING_SIGN_IN: frozenset({Status.QUEUED, Status.CANCELLED, Status.FAILED}),
    Status.SUCCEEDED: frozenset(),
    Status.FAILED: frozenset(),
    Status.CANCELLED: frozenset(),
    Status.DENIED: frozenset(),
}
ACTIVE = ACTIVE_STATUSES
TERMINAL = TERMINAL_STATUSES


class IllegalTransition(RuntimeError):
    """A bug: some code tried a move the table does not allow."""

    def __init__(self, run_id: int, current: str, to: str) -> None:
        super().__init__(f"run {run_id} cannot move from {current} to {to}")
        self.current, self.to = current, to


def allowed(current: str, to: str) -> bool:
    return to in ALLOWED[current]


def move_locked(
    run: Run,
    to: str,
    *,
    seqs: event_log.Sequence | None = None,
    publish: bool = True,
    actor: str = SYSTEM,
    detail: dict[str, Any] | None = None,
    **fields: Any,
) -> frames.Frame:
    """Move a run whose row the caller has locked (``select_for_update`` in ``transaction.atomic``).

    ``seqs``: the worker that holds the run passes its own sequence; everyone else gets numbers after
    the stored ones (safe under the lock). ``publish=False`` leaves publishing the returned frame to
    the caller (the worker publishes it after the event that caused the move, in order).
    """
    current = run.status
    if not allowed(current, to):
        raise IllegalTransition(run.pk, current, to)
    if to in TERMINAL:
        fields = {"finished_at": timezone.now(), "lease_owner": "", "lease_expires_at": None, **fields}
        # A caller that asked with its row lock (the worker's end: ``has_undecided_calls``) and found
        # none spares the locked read: only the run's own segment adds calls, and it is ending.
        if getattr(run, "has_undecided_calls", True):
            _close_undecided_calls(run.pk, to)
    seq = (seqs or event_log.Sequence.after_stored(run.pk)).next()
    run.status = to
    for name, value in fields.items():
        setattr(run, name, value)
    # The status frame's number moves ``last_seq`` in the same UPDATE as the status.
    run.last_seq = max(run.last_seq, seq)
    update_columns(run, ["status", "last_seq", *fields])
    data = {"status": str(to), **(detail or {})}  # detail: e.g. which servers wait for a sign-in
    event_log.append_durable(run.pk, [(seq, frames.Kind.STATUS, data)])
    status_frame = frames.frame(run.pk, seq, frames.Kind.STATUS, without_nul(data))
    if seqs is not None and to != Status.RUNNING:
        # The worker hands the run over: from here the web side numbers its frames (an approval may
        # land as soon as this commits), and nothing more of this segment may be written (event_log).
        seqs.close(seq)
    # Last in the transaction: the audit append holds the chain's lock until commit.
    if to in TERMINAL:
        record("run_finished", run_id=run.pk, actor=actor, subject=run)
    else:
        record("run_status", run_id=run.pk, actor=actor, subject=run, payload={"from": str(current)})
    if publish:
        frames.publish_on_commit(run.conversation_id, [status_frame])
    _announce_to_approvers(current, to)
    return status_frame


def _announce_to_approvers(current: str, to: str) -> None:
    """A run entering or leaving the wait for an admin changes the approvers' queue (approval_feed)."""
    if to == Status.AWAITING_APPROVAL:
        changed_on_commit(Change.REQUESTED)
    elif current == Status.AWAITING_APPROVAL:
        changed_on_commit(Change.DECIDED if to == Status.QUEUED else Change.VOIDED)


def _close_undecided_calls(run_id: int, status: str) -> None:
    """A finished run's calls that still wait for a decision leave the approval queue: they will
    never run, and approving them would only mislead (review I4). Calls held back for a sign-in
    (MCP OAuth) were never sent, and will not be now. Both kinds in one locked read."""
    calls = list(undecided_calls(run_id).select_for_update())
    # The waiting ones first, as when they were two reads (the audit chain records them in this order).
    for call in sorted(calls, key=lambda c: c.status != ToolCall.Status.AWAITING_APPROVAL):
        if call.status == ToolCall.Status.AWAITING_APPROVAL:
            call.status = ToolCall.Status.DENIED
            _ended(call, f"The run ended ({status}) before this call was decided; it did not run.")
        else:
            call.status = ToolCall.Status.FAILED
            _ended(
                call, f"The run ended ({status}) before the sign-in this call waited for; it was not sent."
            )


def undecided_calls(run: Any) -> QuerySet[ToolCall]:
    """A run's calls still waiting for a decision, or held back for a sign-in. ``run``: its id, or
    ``OuterRef("pk")`` inside a query of runs."""
    waiting = Q(status=ToolCall.Status.AWAITING_APPROVAL)
    held = Q(status=ToolCall.Status.APPROVED, error_code="sign_in_required")
    return ToolCall.objects.filter(waiting | held, run_id=run)


def denied_calls(run: Any) -> QuerySet[ToolCall]:
    """The calls of a run that were refused (by an approver, the user or a policy); calls closed because
    the run itself ended (``run_ended``) do not count: they never had a decision. ``run``: its id, or
    ``OuterRef("pk")`` inside a query of runs."""
    return ToolCall.objects.filter(run_id=run, status=ToolCall.Status.DENIED).exclude(error_code="run_ended")


def _ended(call: ToolCall, why: str) -> None:
    call.is_error = True
    call.error_code = "run_ended"
    call.result = why
    call.save(update_fields=["status", "is_error", "error_code", "result", "updated_at"])
    record("tool_call_status", run_id=call.run_id, subject=call)


def move(run_id: int, to: str, **options: Any) -> frames.Frame:
    """``move_locked`` in its own transaction, taking the row lock itself."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        return move_locked(run, to, **options)
