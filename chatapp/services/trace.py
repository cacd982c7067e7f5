"""A run's whole trace as plain JSON: rounds, tool calls, approvals and the event log."""

from __future__ import annotations

from typing import Any

from chatapp import costs
from chatapp.models import Run
from chatapp.redaction import shown


def _dt(value: Any) -> str | None:
    return value.isoformat() if value else None


def cache_totals(run: Run) -> dict[str, int | None]:
    """Prompt-cache reads and writes over the run's rounds (None when no round reported them)."""
    usages = [u or {} for u in run.rounds.values_list("usage", flat=True)]
    totals: dict[str, int | None] = {}
    for key in ("cached_tokens", "cache_write_tokens"):
        known = [u[key] for u in usages if isinstance(u.get(key), int)]
        totals[key] = sum(known) if known else None
    return totals


def run_summary(run: Run) -> dict[str, Any]:
    return {
        "run_id": run.pk,
        "conversation_id": run.conversation_id,
        "status": run.status,
        "provider": run.provider_name,
        "model": run.model,
        "error_class": run.error_class or None,
        "error": run.error or None,
        "text": run.final_text,
        "usage": {
            "prompt_tokens": run.prompt_tokens,
            "completion_tokens": run.completion_tokens,
            "total_tokens": run.prompt_tokens + run.completion_tokens,
            **cache_totals(run),
        },
        "cost": costs.total(run.rounds.all()).to_dict(),
        "rounds_count": run.rounds_count,
        "tool_calls_count": run.tool_calls_count,
        "deliveries": run.deliveries,
        "created_at": _dt(run.created_at),
        "started_at": _dt(run.started_at),
        "finished_at": _dt(run.finished_at),
    }


def run_trace(run: Run, *, include_events: bool = True) -> dict[str, Any]:
    data = run_summary(run)
    data["rounds"] = [
        {
            "index": r.index,
            "kind": r.kind,
            "provider": r.provider_name,
            "model": r.model,
            "request": shown(r.request),
            "response": shown(r.response),
            "finish_reason": r.finish_reason,
            "finish_reason_raw": r.finish_reason_raw,
            "usage": r.usage,
            "ttft_ms": r.ttft_ms,
            "duration_ms": r.duration_ms,
            "compressions": r.compressions,
            "cost": str(r.cost) if r.cost is not None else None,
            "cost_note": r.cost_note or None,
        }
        for r in run.rounds.all()
    ]
    data["tool_calls"] = [
        {
            "round_index": c.round_index,
            "index": c.index,
            "call_id": c.call_id,
            "name": c.name,
            "server": c.server or None,
            "arguments": c.arguments,
            "status": c.status,
            "risk": c.risk,
            "attempts": c.attempts,
            "result": c.result,
            "is_error": c.is_error,
            "error_code": c.error_code or None,
            "truncated": c.truncated,
            "duration_ms": c.duration_ms,
            "approval": _approval(c),
        }
        for c in run.tool_calls.select_related("approval", "approval__decided_by")
    ]
    if include_events:
        data["events"] = [
            {"seq": e.seq, "type": e.type, "durable": e.durable, "payload": shown(e.payload)}
            for e in run.events.all()
        ]
    return data


def _approval(call: Any) -> dict[str, Any] | None:
    approval = getattr(call, "approval", None)
    if approval is None:
        return None
    return {
        "decision": approval.decision,
        "by": approval.decided_by.get_username(),
        "reason": approval.reason,
        "at": _dt(approval.decided_at),
        "definition_hash": approval.definition_hash,
    }
