"""One run as OpenTelemetry GenAI spans, in OTLP/JSON form (semantic conventions for generative AI).

Spans: ``invoke_agent clearloop`` for the run; under it ``chat {model}`` per round and
``execute_tool {name}`` per tool call. Trace and span ids are derived from the run id, so exporting a
run twice gives the same ids (and an importer can de-duplicate). Attribute values follow OTLP/JSON:
``{"stringValue": ...}``, ``{"intValue": "12"}`` (64-bit ints as strings), ``{"arrayValue": ...}``.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from chatapp import costs
from chatapp.models import ProviderConfig, Round, Run, ToolCall
from chatapp.redaction import redact

SCOPE = {"name": "clearloop.audit", "version": "1"}
SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT = 1, 3
STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2
AGENT_NAME = "clearloop"
# gen_ai.provider.name well-known values, by provider preset or kind.
_PROVIDER_NAMES = {
    "openai": "openai",
    "openai_responses": "openai",
    "anthropic": "anthropic",
    "deepseek": "deepseek",
}


def trace_id(run_id: int) -> str:
    return hashlib.sha256(f"clearloop/run/{run_id}".encode()).hexdigest()[:32]


def span_id(run_id: int, *part: object) -> str:
    key = "/".join(str(p) for p in ("clearloop/run", run_id, *part))
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list | tuple):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    return {"stringValue": str(v)}


def attributes(pairs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": value(v)} for k, v in pairs.items() if v is not None and v != ""]


def _nanos(moment: datetime | None) -> str:
    if moment is None:
        return "0"
    return str(int(moment.timestamp() * 1_000_000) * 1000)


def provider_name(run_or_round: Any) -> str:
    config = ProviderConfig.objects.filter(name=run_or_round.provider_name).first()
    if config is None:
        return run_or_round.provider_name
    if config.kind == ProviderConfig.Kind.ANTHROPIC:
        return "anthropic"
    return _PROVIDER_NAMES.get(config.preset, config.preset or config.name)


def _span(run: Run, sid: str, parent: str | None, name: str, kind: int, **fields: Any) -> dict[str, Any]:
    span: dict[str, Any] = {"traceId": trace_id(run.pk), "spanId": sid}
    if parent:
        span["parentSpanId"] = parent
    span.update(name=name, kind=kind, **fields)
    return span


def _status(error: str | None) -> dict[str, Any]:
    return {"code": STATUS_ERROR, "message": error} if error else {"code": STATUS_OK}


def run_span(run: Run, provider: str) -> dict[str, Any]:
    failed = run.status == Run.Status.FAILED  # a cancelled run was stopped by its user: not an error
    attrs = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": AGENT_NAME,
        "gen_ai.conversation.id": str(run.conversation_id),
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": run.model,
        "gen_ai.usage.input_tokens": run.prompt_tokens,
        "gen_ai.usage.output_tokens": run.completion_tokens,
        "clearloop.run.id": run.pk,
        "clearloop.run.status": run.status,
        "clearloop.provider.config": run.provider_name,
        "error.type": (run.error_class or run.status) if failed else None,
        **_cost_attributes(run),
    }
    return _span(
        run,
        span_id(run.pk),
        None,
        f"invoke_agent {AGENT_NAME}",
        SPAN_KIND_INTERNAL,
        startTimeUnixNano=_nanos(run.started_at or run.created_at),
        endTimeUnixNano=_nanos(run.finished_at or run.started_at or run.created_at),
        attributes=attributes(attrs),
        status=_status(redact(run.error) or run.status if failed else None),
    )


def _cost_attributes(run: Run) -> dict[str, Any]:
    total = costs.total(run.rounds.all())
    return {
        "clearloop.run.cost": str(total.amount) if total.priced else None,
        "clearloop.run.unpriced_rounds": total.unpriced,
        "clearloop.cost.currency": settings.COST_CURRENCY,
    }


def round_span(run: Run, rnd: Round, provider: str) -> dict[str, Any]:
    usage = rnd.usage or {}
    response = rnd.response if isinstance(rnd.response, dict) else {}
    end = rnd.created_at
    start = end - timedelta(milliseconds=rnd.duration_ms or 0)
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": rnd.model,
        "gen_ai.response.model": response.get("model"),
        "gen_ai.response.id": response.get("response_id"),
        "gen_ai.response.finish_reasons": [rnd.finish_reason] if rnd.finish_reason else [],
        "gen_ai.usage.input_tokens": usage.get("prompt_tokens"),
        "gen_ai.usage.output_tokens": usage.get("completion_tokens"),
        # Semantic conventions (development status): both counts are part of input_tokens.
        "gen_ai.usage.cache_read.input_tokens": usage.get("cached_tokens"),
        "gen_ai.usage.cache_creation.input_tokens": usage.get("cache_write_tokens"),
        "gen_ai.conversation.id": str(run.conversation_id),
        "clearloop.round.index": rnd.index,
        "clearloop.round.kind": rnd.kind,
        "clearloop.round.finish_reason_raw": rnd.finish_reason_raw,
        "clearloop.round.ttft_ms": rnd.ttft_ms,
        # A Decimal as text (exact); absent when unknown, with the reason.
        "clearloop.round.cost": str(rnd.cost) if rnd.cost is not None else None,
        "clearloop.round.cost_note": rnd.cost_note,
        "clearloop.cost.currency": settings.COST_CURRENCY,
    }
    return _span(
        run,
        span_id(run.pk, "round", rnd.index),
        span_id(run.pk),
        f"chat {rnd.model}",
        SPAN_KIND_CLIENT,
        startTimeUnixNano=_nanos(start),
        endTimeUnixNano=_nanos(end),
        attributes=attributes(attrs),
        status=_status(None),
    )


def tool_span(run: Run, call: ToolCall) -> dict[str, Any]:
    failed = call.is_error or call.status in (ToolCall.Status.FAILED, ToolCall.Status.DENIED)
    end = call.updated_at
    start = end - timedelta(milliseconds=call.duration_ms) if call.duration_ms else call.created_at
    attrs = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.call_id,
        "gen_ai.tool.type": "extension" if call.server else "function",
        "gen_ai.tool.call.arguments": redact(call.arguments),
        "gen_ai.tool.call.result": redact(call.result),
        "clearloop.tool.status": call.status,
        "clearloop.tool.server": call.server,
        "clearloop.tool.risk": call.risk,
        "clearloop.tool.attempts": call.attempts,
        "clearloop.round.index": call.round_index,
        "error.type": (call.error_code or call.status) if failed else None,
    }
    span = _span(
        run,
        span_id(run.pk, "tool", call.round_index, call.index),
        span_id(run.pk),
        f"execute_tool {call.name}",
        SPAN_KIND_INTERNAL,
        startTimeUnixNano=_nanos(start),
        endTimeUnixNano=_nanos(end),
        attributes=attributes(attrs),
        status=_status(call.error_code or call.status if failed else None),
    )
    approval = getattr(call, "approval", None)
    if approval is not None:
        span["events"] = [
            {
                "timeUnixNano": _nanos(approval.decided_at),
                "name": "clearloop.approval",
                "attributes": attributes(
                    {
                        "clearloop.approval.decision": approval.decision,
                        "clearloop.approval.by": approval.decided_by.get_username(),
                        "clearloop.approval.reason": redact(approval.reason),
                    }
                ),
            }
        ]
    return span


def run_to_otel(run: Run) -> dict[str, Any]:
    provider = provider_name(run)
    spans = [run_span(run, provider)]
    spans += [round_span(run, rnd, provider) for rnd in run.rounds.all()]
    calls = run.tool_calls.select_related("approval", "approval__decided_by")
    spans += [tool_span(run, call) for call in calls]
    resource = {"attributes": attributes({"service.name": "clearloop", "service.version": "0.1.0"})}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": SCOPE, "spans": spans}]}]}
