"""Engine events turned into JSON frames for the event log and the browser."""

from __future__ import annotations

import dataclasses
from typing import Any

from agent import events as ev
from agent.providers.types import AssembledResponse, Usage
from agent.state import choice_from_dict

_TYPE_NAMES = {
    ev.RoundStarted: "round_started",
    ev.TextDelta: "text",
    ev.ReasoningDelta: "reasoning",
    ev.ToolCallDelta: "tool_call_delta",
    ev.RoundFinished: "round_finished",
    ev.ToolCallChanged: "tool_call",
    ev.ToolProgress: "tool_progress",
    ev.ApprovalRequested: "approval_requested",
    ev.ContextCompressed: "context_compressed",
    ev.RunFinished: "run_finished",
    ev.RunFailed: "run_failed",
}


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        to_dict = getattr(value, "to_dict", None)
        if to_dict is not None:
            return to_dict()
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def event_type(event: ev.Event) -> str:
    return _TYPE_NAMES[type(event)]


def event_payload(event: ev.Event) -> dict[str, Any]:
    return {f.name: _plain(getattr(event, f.name)) for f in dataclasses.fields(event)}


# --- back from stored rows -------------------------------------------------------------------
_BY_NAME = {name: cls for cls, name in _TYPE_NAMES.items()}


def _usage(data: dict[str, Any] | None) -> Usage:
    data = data or {}
    return Usage(
        **{
            k: data.get(k)
            for k in (
                "prompt_tokens",
                "completion_tokens",
                "total_tokens",
                "cached_tokens",
                "reasoning_tokens",
                "cache_write_tokens",
                "raw",
            )
        }
    )


def _response(data: dict[str, Any]) -> AssembledResponse:
    # One reader for stored choices (agent.state): replay blocks and per-call extras included.
    choices = tuple(choice_from_dict(c) for c in data.get("choices", []))
    return AssembledResponse(
        choices=choices,
        usage=_usage(data.get("usage")),
        response_id=data.get("response_id"),
        model=data.get("model"),
    )


def event_from_row(kind: str, payload: dict[str, Any]) -> ev.Event | None:
    """Rebuild a durable event from its stored payload (None for ephemeral kinds)."""
    cls = _BY_NAME.get(kind)
    if cls is None or not issubclass(cls, ev.DURABLE):
        return None
    data = dict(payload)
    if cls is ev.RoundFinished:
        data["response"] = _response(data["response"])
        data["usage"] = _usage(data.get("usage"))
    elif cls is ev.RunFinished:
        data["usage"] = _usage(data.get("usage"))
    elif cls is ev.ApprovalRequested:
        data["call_ids"] = tuple(data.get("call_ids", ()))
    return cls(**data)
