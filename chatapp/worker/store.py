"""Synchronous writes of a run's events; called from the runtime's DB threads.

``persist_durable`` writes a durable event's row and the domain rows it changes in one transaction,
and returns the ``status`` frames of any move it made (the recorder publishes them right after the
event's own frame, so the browser sees them in order). Status moves go through
``services/run_lifecycle.py``; this module never writes ``Run.status`` itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from agent import events as ev
from chatapp import event_log
from chatapp.audit import record
from chatapp.audit.log import appended_together
from chatapp.bound_cursor import bound_cursor
from chatapp.frames import Frame, Kind
from chatapp.models import TERMINAL_STATUSES, Message, Round, Run, RunEvent, ToolCall
from chatapp.nul import without_nul
from chatapp.pricing import price_for, round_cost
from chatapp.redaction import redact as _redact
from chatapp.services import mcp_oauth
from chatapp.services.locked_run import locked_run
from chatapp.services.run_lifecycle import denied_calls, move_locked
from chatapp.worker import calibration
from chatapp.worker.upsert import upsert


def redact(value: Any, *, keep_replay: bool = False) -> Any:
    """Secrets out, and NUL characters (which PostgreSQL cannot store) replaced."""
    return without_nul(_redact(value, keep_replay=keep_replay))


def append_ephemeral(run_id: int, seq: int, kind: str, payload: dict[str, Any]) -> Frame:
    return event_log.append(run_id, seq, kind, payload, durable=False)


def append_events(rows: list[tuple[int, int, str, dict[str, Any]]]) -> None:
    """Live frames of many runs in one INSERT, on the connection that does not wait for fsync."""
    event_log.insert_rows(rows, durable=False, using=settings.DELTA_DB)


# The run is not this segment's to write any more (another worker holds it, or it was handed over).
LeaseLost = event_log.LeaseLost


def persist_durable(
    run_id: int,
    seq: int,
    kind: str,
    payload: dict[str, Any],
    event: ev.Event,
    extra: dict[str, Any] | None = None,
    lease: str = "",
    seqs: event_log.Sequence | None = None,
) -> list[Frame]:
    """Write the event row and the domain rows it changes in one transaction; return the status
    frames of the move it made, if any (numbered from ``seqs``, the caller's, when given).

    With ``lease``, the run row is locked first and the write refused (``LeaseLost``) unless this
    lease still holds the run: a worker wrongly thought dead can never write over its successor.
    """
    return persist_durable_batch(run_id, [DurableItem(seq, kind, payload, event, extra or {})], lease, seqs)


@dataclass(frozen=True)
class DurableItem:
    """One durable event of a batch, numbered and redacted as it is to be stored."""

    seq: int
    kind: str
    payload: dict[str, Any]
    event: ev.Event
    extra: dict[str, Any]


def persist_durable_batch(
    run_id: int,
    items: list[DurableItem],
    lease: str = "",
    seqs: event_log.Sequence | None = None,
    live: list[tuple[int, str, dict[str, Any]]] | None = None,
) -> list[Frame]:
    """``persist_durable`` for several events of one step, in their order, in ONE transaction (one
    lease check, one INSERT of their frames, one audit append, one commit): either all of them are
    stored or none. Returns the status frames of the moves they made, in order. ``live``: frames
    numbered before them that are not durable (the deltas the step's first event ends: the recorder
    stores them here rather than in a write of their own just before)."""
    moved: list[Frame] = []
    learned: list[calibration.Observation] = []
    with transaction.atomic(), appended_together():
        facts = _RunFacts(run_id, lease, items)
        event_log.append_durable(run_id, [(item.seq, item.kind, item.payload) for item in items], live)
        for item in items:
            moved += _persist_one(facts, item, seqs, learned)
        facts.calls.count_new()
    # After the commit, one statement each: the ratio is shared by every run of the model, so its row
    # is not locked for the length of a round's transaction.
    for observation in learned:
        calibration.fold(observation)
    return moved


class _RunFacts:
    """The first statement of a step's transaction: one ``UPDATE`` of the run's row that locks it,
    checks the lease, moves ``Run.last_seq`` past the step's frames, adds the step's rounds to the
    run's counters and returns the run's provider and model (what a stored round is priced with).

    Written as SQL rather than through the ORM: it is the one statement every step of every run
    runs, and the ORM's compiling of it was most of its cost (docs/performance.md, session 9).
    Both PostgreSQL and SQLite (3.35+) run it.
    """

    def __init__(self, run_id: int, lease: str, items: list[DurableItem]) -> None:
        self.run_id = run_id
        self.calls = _CallRows(run_id, items)
        rounds = [item.event.usage.to_dict() for item in items if isinstance(item.event, ev.RoundFinished)]
        row = _step_update(run_id, lease, max(item.seq for item in items), rounds)
        if row is None and lease:
            raise LeaseLost(f"run {run_id} is no longer held by {lease}")
        self._provider_and_model = row

    @property
    def provider_and_model(self) -> tuple[str, str]:
        if self._provider_and_model is None:  # no lease given and no row: the ORM says why
            return Run.objects.filter(pk=self.run_id).values_list("provider_name", "model").get()
        return self._provider_and_model


def _step_update(
    run_id: int, lease: str, last_seq: int, rounds: list[dict[str, Any]]
) -> tuple[str, str] | None:
    greatest = "GREATEST" if connection.vendor == "postgresql" else "MAX"
    sets = [f"last_seq = {greatest}(last_seq, %s)"]
    params: list[Any] = [last_seq]
    if rounds:
        sets.append("rounds_count = rounds_count + %s")
        sets.append("prompt_tokens = prompt_tokens + %s")
        sets.append("completion_tokens = completion_tokens + %s")
        params += [
            len(rounds),
            sum(usage.get("prompt_tokens") or 0 for usage in rounds),
            sum(usage.get("completion_tokens") or 0 for usage in rounds),
        ]
    where = "id = %s" + (" AND lease_owner = %s" if lease else "")
    params += [run_id, *([lease] if lease else [])]
    table = connection.ops.quote_name(Run._meta.db_table)
    sql = f"UPDATE {table} SET {', '.join(sets)} WHERE {where} RETURNING provider_name, model"  # noqa: S608
    with bound_cursor(connection) as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return (row[0], row[1]) if row else None


def _persist_one(
    facts: _RunFacts,
    item: DurableItem,
    seqs: event_log.Sequence | None,
    learned: list[calibration.Observation],
) -> list[Frame]:
    event, extra, run_id = item.event, item.extra, facts.run_id
    if isinstance(event, ev.RunFailed):
        return _fail(run_id, event, extra.get("partial_text", ""), seqs)
    if isinstance(event, ev.ToolCallChanged):
        facts.calls.store(item.seq, event)
    elif isinstance(event, ev.RoundFinished):
        learned += _store_round(facts, event, extra.get("rounds_before"))
    elif isinstance(event, ev.ApprovalRequested):
        return _pause(run_id, seqs)
    elif isinstance(event, ev.RunFinished):
        return _finish(run_id, event, seqs)
    return []


def _locked(run_id: int, *, with_denied: bool = False) -> Run:
    # With the question: the audit record of the move pins its digest. The read also asks whether a
    # call waits for a decision: an ending run with none skips the locked read of them (move_locked).
    run = locked_run(run_id, undecided=True, denied=with_denied)
    if run is None:
        raise Run.DoesNotExist(f"no run {run_id}")
    return run


def _fail(
    run_id: int, event: ev.RunFailed, partial_text: str, seqs: event_log.Sequence | None
) -> list[Frame]:
    run = _locked(run_id)
    if run.status in TERMINAL_STATUSES:
        # A failure reported after the run ended (a stop racing the last event): the row records it,
        # the outcome stands.
        return []
    partial_text = redact(partial_text)
    if partial_text.strip():
        # What the model had written before the stop or the error is kept, marked as partial.
        _store_answer(run, partial_text, partial=True)
    else:
        run.answers_stored_now = []  # none: the audit record of the end need not look (audit/log.py)
    cancelled = event.code == "cancelled" or (run.cancel_requested and event.error_class == "Cancelled")
    status = Run.Status.CANCELLED if cancelled else Run.Status.FAILED
    frame = move_locked(
        run,
        status,
        seqs=seqs,
        publish=seqs is None,
        # Errors are text from providers, tools and exceptions: redacted like everything stored (H2).
        error_class=redact(event.error_class),
        error=redact(event.message),
        final_text=partial_text,
    )
    return [frame]


def _pause(run_id: int, seqs: event_log.Sequence | None) -> list[Frame]:
    """The run waits for an approval, holding no worker."""
    run = _locked(run_id)
    if run.status != Run.Status.RUNNING:
        return []  # paused already (this segment's earlier request), or stopped meanwhile
    _check_lease(run, seqs)
    return [move_locked(run, Run.Status.AWAITING_APPROVAL, seqs=seqs, publish=seqs is None)]


def _check_lease(run: Run, seqs: event_log.Sequence | None) -> None:
    """A segment whose lease lapsed must not pause the run its successor now drives, with numbers
    its successor is using."""
    if seqs is not None and seqs.lease and run.lease_owner != seqs.lease:
        raise LeaseLost(f"run {run.pk} is no longer held by {seqs.lease}")


def pause_for_sign_in(run_id: int, seqs: event_log.Sequence | None, servers: Any) -> list[Frame]:
    """An MCP server of the run needs a sign-in: the run waits, holding no worker, until the sign-in's
    callback queues it again (services/mcp_oauth.py). ``servers``: the descriptions of
    ``sign_ins_needed``, or the names of servers whose calls could not be sent."""
    with transaction.atomic():
        run = _locked(run_id)
        if run.status != Run.Status.RUNNING:
            return []
        _check_lease(run, seqs)
        names = {s for s in servers or [] if isinstance(s, str)}
        described = [s for s in servers or [] if isinstance(s, dict)]
        if names:
            described += mcp_oauth.sign_ins_needed(run.conversation.owner_id, only=names)
        detail = {"servers": described}
        moved = move_locked(run, Run.Status.AWAITING_SIGN_IN, seqs=seqs, publish=seqs is None, detail=detail)
        if names and not described:
            # Signed in while the call was on its way: nothing to wait for, the run goes on at once.
            # The lease is let go first (the task's end would do it), so the run can be queued.
            run.lease_owner, run.lease_expires_at = "", None
            run.save(update_fields=["lease_owner", "lease_expires_at"])
            transaction.on_commit(lambda: mcp_oauth.requeue(run_id))
        return [moved]


def pause_for_approval(run_id: int, seqs: event_log.Sequence | None = None) -> list[Frame]:
    """The loop stopped to wait for decisions (also when no new request was emitted, e.g. after an
    approval was voided): the run waits, whatever state the last segment left it in."""
    with transaction.atomic():
        return _pause(run_id, seqs)


def _store_round(
    facts: _RunFacts, event: ev.RoundFinished, known: dict[str, Any] | None = None
) -> list[calibration.Observation]:
    """``known``: what the segment's recorder saw of the round before and of this round's shrink
    steps (``RunBook.rounds_before``); read from the stored rows when it did not see them."""
    run_id = facts.run_id
    usage = event.usage.to_dict()
    provider_name, model = facts.provider_and_model
    # Priced now, at the prices in force: a later change of the table does not rewrite history.
    cost = round_cost(usage, price_for(provider_name, model, event.model))
    values = {
        "kind": event.kind,
        "provider_name": event.provider,
        "model": event.model,
        "request": redact(event.request),
        # Replay blocks verbatim: a round row rebuilt into its event must replay the same bytes.
        "response": redact(event.response.to_dict(), keep_replay=True),
        "finish_reason": event.finish_reason,
        "finish_reason_raw": event.finish_reason_raw,
        "usage": usage,
        "ttft_ms": event.ttft_ms,
        "duration_ms": event.duration_ms,
        "cost": cost.amount,
        "cost_note": cost.note,
        "compressions": known["compressions"] if known else _compressions(run_id, event.round_index),
    }
    keys = {"run_id": run_id, "index": event.round_index}
    # The run's counters moved with the step's first statement (``_step_update``).
    pk, _ = upsert(Round, keys, values)
    # What the chain pins is all in ``keys`` and ``values`` (audit.describe): no read of the row.
    record("round_stored", run_id=run_id, subject=Round(pk=pk, **keys, **values))
    before = known["counts_before"] if known else _counts_before(facts, event)
    observed = calibration.observe(provider_name, model or event.model, event, before)
    return [observed] if observed else []


def _counts_before(facts: _RunFacts, event: ev.RoundFinished) -> dict[str, Any] | None:
    """The run's previous round's raw count and reported prompt tokens (calibration), read as two
    JSON keys rather than the whole stored request."""
    if event.round_index == 0:
        return None
    row = (
        Round.objects.filter(run_id=facts.run_id, index=event.round_index - 1)
        .values_list("request__raw_input_tokens", "usage__prompt_tokens")
        .first()
    )
    return {"request": {"raw_input_tokens": row[0]}, "usage": {"prompt_tokens": row[1]}} if row else None


def _compressions(run_id: int, round_index: int) -> list[dict[str, Any]]:
    """The shrink steps taken to fit this round's request (R-CTX-2): their events come before the
    round's row exists, so the round collects them when it is stored."""
    rows = RunEvent.objects.filter(run_id=run_id, type=Kind.CONTEXT_COMPRESSED, durable=True).order_by("seq")
    steps = [{k: v for k, v in row.payload.items() if k != "v"} for row in rows]
    return [step for step in steps if step.get("round_index") == round_index]


class _CallRows:
    """A step's tool-call statuses. Each call's row is written once, with the last status the step
    gives it (a step often proposes, approves and starts a call: one upsert instead of three), and
    before the first of its statuses is recorded; every status still has its own audit record, in
    order, pinning that status's values (docs/performance.md, session 15)."""

    def __init__(self, run_id: int, items: list[DurableItem]) -> None:
        self.run_id = run_id
        self._values: dict[int, dict[str, Any]] = {}  # by the event's seq: its own values
        self._rows: dict[tuple[int, int], dict[str, Any]] = {}  # by call: the row as the step leaves it
        for item in items:
            if isinstance(item.event, ev.ToolCallChanged):
                values = _call_values(item.event, item.extra)
                self._values[item.seq] = values
                key = (item.event.round_index, item.event.index)
                self._rows[key] = {**self._rows.get(key, {}), **values}  # a definition given once stays
        self._pks: dict[tuple[int, int], int] = {}
        self._new = 0

    def store(self, seq: int, event: ev.ToolCallChanged) -> None:
        key = (event.round_index, event.index)
        keys = {"run_id": self.run_id, "round_index": event.round_index, "index": event.index}
        if key not in self._pks:
            self._pks[key], created = upsert(ToolCall, keys, self._rows[key])
            self._new += created
        values = self._values[seq]
        record("tool_call_status", run_id=self.run_id, subject=ToolCall(pk=self._pks[key], **keys, **values))

    def count_new(self) -> None:
        """The step's newly stored calls, added to the run's count in one statement (SQL: the ORM's
        compiling of an ``F()`` update cost more than the statement)."""
        if self._new:
            table = connection.ops.quote_name(Run._meta.db_table)
            with bound_cursor(connection) as cursor:
                cursor.execute(
                    f"UPDATE {table} SET tool_calls_count = tool_calls_count + %s WHERE id = %s",  # noqa: S608
                    [self._new, self.run_id],
                )


def _call_values(event: ev.ToolCallChanged, extra: dict[str, Any]) -> dict[str, Any]:
    """The row's values this status sets (the definition only with the status that carries it)."""
    definition: dict[str, Any] = {k: extra[k] for k in ("definition", "definition_hash") if k in extra}
    return {
        "call_id": event.call_id,
        "name": event.name,
        "server": event.server or "",
        "arguments": redact(event.arguments),
        "status": event.status,
        "risk": event.risk or "",
        "result": redact(event.result) if event.result is not None else "",
        "is_error": event.is_error,
        "error_code": event.error_code or "",
        "truncated": event.truncated,
        "attempts": event.attempts,
        "duration_ms": event.duration_ms,
        **definition,
    }


def _finish(run_id: int, event: ev.RunFinished, seqs: event_log.Sequence | None) -> list[Frame]:
    # The row lock's read also asks whether a call was denied: one statement, not two.
    run = _locked(run_id, with_denied=True)
    text = redact(event.text)
    _store_answer(run, text, partial=event.partial)
    if event.partial and run.cancel_requested:
        status = Run.Status.CANCELLED
    elif run.had_denied_call:  # type: ignore[attr-defined]  # the annotation of _locked(with_denied=True)
        status = Run.Status.DENIED  # the answer was given without a call someone (or a policy) refused
    else:
        status = Run.Status.SUCCEEDED
    return [move_locked(run, status, seqs=seqs, publish=seqs is None, final_text=text)]


def had_denied_call(run_id: int) -> bool:
    return denied_calls(run_id).exists()


def _store_answer(run: Run, text: str, *, partial: bool) -> None:
    """A run's answer, stored once, with its end (the status check under the row lock keeps a second
    end out): the end's audit record pins it as written instead of reading it back."""
    run.answers_stored_now = [text]
    Message.objects.create(
        conversation_id=run.conversation_id,
        run=run,
        role=Message.Role.ASSISTANT,
        content=text,
        payload={"role": "assistant", "content": text},
        partial=partial,
    )


UNKNOWN_AFTER_STOP = "The run was stopped while this call was running; whether it took effect is unknown."


def mark_running_unknown(run_id: int) -> int:
    """After a stop, calls that were running have an unknown outcome; they are never repeated.

    Each change is chained like any other tool-call status, so the audit check still matches them.
    """
    marked = 0
    for call in ToolCall.objects.filter(run_id=run_id, status=ToolCall.Status.RUNNING):
        with transaction.atomic():
            call.status = ToolCall.Status.UNKNOWN
            call.is_error = True
            call.error_code = "outcome_unknown"
            call.result = UNKNOWN_AFTER_STOP
            call.save(update_fields=["status", "is_error", "error_code", "result", "updated_at"])
            record("tool_call_status", run_id=run_id, subject=call)
        marked += 1
    return marked


def void_stale_approvals(run_id: int, current_hashes: dict[str, str | None]) -> list[str]:
    """Approvals given for a tool definition that has changed since are void: ask again.

    Called by the worker before it executes approved calls. The approval is removed (the audit log
    keeps it, with the reason it was voided) and the call waits for a new decision.
    """
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
