"""Synchronous writes of a run's durable events; called from the runtime's DB threads."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from agent import events as ev
from chatapp.audit import record
from chatapp.models import Message, Round, Run, RunEvent, ToolCall
from chatapp.nul import without_nul
from chatapp.pricing import price_for, round_cost
from chatapp.redaction import redact as _redact
from chatapp.worker import calibration


def redact(value: Any, *, keep_replay: bool = False) -> Any:
    """Secrets out, and NUL characters (which PostgreSQL cannot store) replaced."""
    return without_nul(_redact(value, keep_replay=keep_replay))


def append_event(run_id: int, seq: int, kind: str, payload: dict[str, Any], durable: bool) -> None:
    # Ephemeral frames use the "deltas" connection (no fsync wait, see settings.DELTA_DB).
    using = "default" if durable else settings.DELTA_DB
    payload = without_nul(payload)
    RunEvent.objects.using(using).create(run_id=run_id, seq=seq, type=kind, payload=payload, durable=durable)


def append_events(rows: list[tuple[int, int, str, dict[str, Any]]]) -> None:
    """Live frames of many runs in one INSERT, on the connection that does not wait for fsync."""
    RunEvent.objects.using(settings.DELTA_DB).bulk_create(
        [
            RunEvent(run_id=run_id, seq=seq, type=kind, payload=without_nul(payload), durable=False)
            for run_id, seq, kind, payload in rows
        ]
    )


class LeaseLost(Exception):
    """The run is held by another worker now: this one must not write to it any more."""


def persist_durable(
    run_id: int,
    seq: int,
    kind: str,
    payload: dict[str, Any],
    event: ev.Event,
    extra: dict[str, Any] | None = None,
    lease: str = "",
) -> None:
    """Write the event row and the domain rows it changes in one transaction.

    With ``lease``, the run row is locked first and the write refused (``LeaseLost``) unless this
    lease still holds the run: a worker wrongly thought dead can never write over its successor.
    """
    payload = without_nul(payload)
    with transaction.atomic():
        if lease and not Run.objects.select_for_update().filter(pk=run_id, lease_owner=lease).exists():
            raise LeaseLost(f"run {run_id} is no longer held by {lease}")
        RunEvent.objects.create(run_id=run_id, seq=seq, type=kind, payload=payload, durable=True)
        Run.objects.filter(pk=run_id).update(last_seq=seq)
        extra = extra or {}
        if isinstance(event, ev.RunFailed):
            _fail(run_id, event, extra.get("partial_text", ""))
        elif isinstance(event, ev.ToolCallChanged):
            _store_tool_call(run_id, event, extra)
        else:
            _apply(run_id, event)


def _fail(run_id: int, event: ev.RunFailed, partial_text: str) -> None:
    run = Run.objects.get(pk=run_id)
    partial_text = redact(partial_text)
    if partial_text.strip():
        # What the model had written before the stop or the error is kept, marked as partial.
        _store_answer(run, partial_text, partial=True)
    cancelled = event.code == "cancelled" or (run.cancel_requested and event.error_class == "Cancelled")
    status = Run.Status.CANCELLED if cancelled else Run.Status.FAILED
    finish_run(
        run_id, status, error_class=event.error_class, error=redact(event.message), final_text=partial_text
    )


def _apply(run_id: int, event: ev.Event) -> None:
    if isinstance(event, ev.RoundFinished):
        _store_round(run_id, event)
    elif isinstance(event, ev.ApprovalRequested):
        Run.objects.filter(pk=run_id).update(status=Run.Status.AWAITING_APPROVAL)
    elif isinstance(event, ev.RunFinished):
        _finish(run_id, event)


def _store_round(run_id: int, event: ev.RoundFinished) -> None:
    usage = event.usage.to_dict()
    run = Run.objects.only("provider_name", "model").get(pk=run_id)
    # Priced now, at the prices in force: a later change of the table does not rewrite history.
    cost = round_cost(usage, price_for(run.provider_name, run.model, event.model))
    stored, _ = Round.objects.update_or_create(
        run_id=run_id,
        index=event.round_index,
        defaults={
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
        },
    )
    previous = (
        Round.objects.filter(run_id=run_id, index=event.round_index - 1).values("request", "usage").first()
    )
    calibration.learn(run.provider_name, run.model or event.model, event, previous)
    Run.objects.filter(pk=run_id).update(
        rounds_count=F("rounds_count") + 1,
        prompt_tokens=F("prompt_tokens") + (usage.get("prompt_tokens") or 0),
        completion_tokens=F("completion_tokens") + (usage.get("completion_tokens") or 0),
    )
    record("round_stored", run_id=run_id, subject=stored)


def _store_tool_call(run_id: int, event: ev.ToolCallChanged, extra: dict[str, Any]) -> None:
    definition = {k: extra[k] for k in ("definition", "definition_hash") if k in extra}
    call, created = ToolCall.objects.update_or_create(
        run_id=run_id,
        round_index=event.round_index,
        index=event.index,
        defaults={
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
        },
    )
    if created:
        Run.objects.filter(pk=run_id).update(tool_calls_count=F("tool_calls_count") + 1)
    record("tool_call_status", run_id=run_id, subject=call)


def _finish(run_id: int, event: ev.RunFinished) -> None:
    run = Run.objects.get(pk=run_id)
    text = redact(event.text)
    _store_answer(run, text, partial=event.partial)
    status = Run.Status.CANCELLED if event.partial and run.cancel_requested else Run.Status.SUCCEEDED
    finish_run(run_id, status, final_text=text)


def _store_answer(run: Run, text: str, *, partial: bool) -> None:
    Message.objects.create(
        conversation_id=run.conversation_id,
        run=run,
        role=Message.Role.ASSISTANT,
        content=text,
        payload={"role": "assistant", "content": text},
        partial=partial,
    )


def finish_run(run_id: int, status: str, **fields: Any) -> None:
    # Errors are text from providers, tools and exceptions: redacted like everything else stored (H2).
    fields = {k: redact(v) if isinstance(v, str) else v for k, v in fields.items()}
    Run.objects.filter(pk=run_id).update(
        status=status, finished_at=timezone.now(), lease_owner="", lease_expires_at=None, **fields
    )
    _close_undecided_calls(run_id, status)
    record("run_finished", run_id=run_id, subject=Run.objects.get(pk=run_id))


def _close_undecided_calls(run_id: int, status: str) -> None:
    """A finished run's calls that still wait for a decision leave the approval queue: they will
    never run, and approving them would only mislead (review I4)."""
    waiting = ToolCall.objects.filter(run_id=run_id, status=ToolCall.Status.AWAITING_APPROVAL)
    for call in waiting.select_for_update():
        call.status = ToolCall.Status.DENIED
        call.is_error = True
        call.error_code = "run_ended"
        call.result = f"The run ended ({status}) before this call was decided; it did not run."
        call.save(update_fields=["status", "is_error", "error_code", "result", "updated_at"])
        record("tool_call_status", run_id=run_id, subject=call)


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


def mark_awaiting_sign_in(run_id: int) -> None:
    Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).update(status=Run.Status.AWAITING_SIGN_IN)


def mark_awaiting_approval(run_id: int) -> None:
    Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).update(status=Run.Status.AWAITING_APPROVAL)
