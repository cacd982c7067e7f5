"""A run's whole trace as plain JSON: rounds, tool calls, approvals and the event log."""

from __future__ import annotations

from typing import Any

from chatapp.models import Run
from chatapp.redaction import shown


def _dt(value: Any) -> str | None:
    return value.isoformat() if value else None


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
        },
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
