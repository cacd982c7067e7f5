"""Engine events to stored payloads and back, with a version on every payload.

``event_payload`` turns an event into the JSON stored in ``RunEvent.payload`` and sent as a frame's
``data``; ``event_from_row`` reads a durable one back to rebuild a run (``RunState.rebuild``). Each
payload carries ``"v"`` (``PAYLOAD_VERSION``): a row written before a field was renamed goes through
the upgrades in ``_UPGRADES`` first, and fields the event no longer has are dropped, so old runs
still load after the engine's dataclasses change. Rows written before versions existed are v0,
which is today's v1 format without the key. Decoding responses and usage is the engine's own
(``agent.state``): one reader for stored rounds, here and in ``RunState.from_dict``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from agent import events as ev
from agent.state import response_from_dict, usage_from_dict
from chatapp.frames import Kind

PAYLOAD_VERSION = 1

_KINDS: dict[type, Kind] = {
    ev.RoundStarted: Kind.ROUND_STARTED,
    ev.RoundRetried: Kind.ROUND_RETRIED,
    ev.TextDelta: Kind.TEXT,
    ev.ReasoningDelta: Kind.REASONING,
    ev.ToolCallDelta: Kind.TOOL_CALL_DELTA,
    ev.RoundFinished: Kind.ROUND_FINISHED,
    ev.ToolCallChanged: Kind.TOOL_CALL,
    ev.ToolProgress: Kind.TOOL_PROGRESS,
    ev.ApprovalRequested: Kind.APPROVAL_REQUESTED,
    ev.ContextCompressed: Kind.CONTEXT_COMPRESSED,
    ev.RunFinished: Kind.RUN_FINISHED,
    ev.RunFailed: Kind.RUN_FAILED,
}
_BY_KIND: dict[str, type] = {kind.value: cls for cls, kind in _KINDS.items()}

# version -> a function taking (kind, payload of that version) to the next version's payload.
_UPGRADES: dict[int, Callable[[str, dict[str, Any]], dict[str, Any]]] = {
    0: lambda kind, payload: payload,  # v0 rows are v1 rows without "v"
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


def event_type(event: ev.Event) -> Kind:
    return _KINDS[type(event)]


def event_payload(event: ev.Event) -> dict[str, Any]:
    fields = {f.name: _plain(getattr(event, f.name)) for f in dataclasses.fields(event)}
    return {"v": PAYLOAD_VERSION, **fields}


def upgrade(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A stored payload brought to ``PAYLOAD_VERSION`` (without the "v" key)."""
    data = dict(payload)
    version = int(data.pop("v", 0))
    if version > PAYLOAD_VERSION:
        raise ValueError(
            f"a {kind} row of payload version {version}; this code reads up to {PAYLOAD_VERSION}"
        )
    while version < PAYLOAD_VERSION:
        data = _UPGRADES[version](kind, data)
        version += 1
    return data


def event_from_row(kind: str, payload: dict[str, Any]) -> ev.Event | None:
    """Rebuild a durable event from its stored payload (None for ephemeral and host kinds)."""
    cls = _BY_KIND.get(kind)
    if cls is None or not issubclass(cls, ev.DURABLE):
        return None
    data = upgrade(kind, payload)
    names = {f.name for f in dataclasses.fields(cls)}
    data = {k: v for k, v in data.items() if k in names}
    if cls is ev.RoundFinished:
        data["response"] = response_from_dict(data["response"])
        data["usage"] = usage_from_dict(data.get("usage"))
    elif cls is ev.RunFinished:
        data["usage"] = usage_from_dict(data.get("usage"))
    elif cls is ev.ApprovalRequested:
        data["call_ids"] = tuple(data.get("call_ids", ()))
    elif cls is ev.ToolCallChanged:
        data["media"] = tuple(data.get("media") or ())
    return cls(**data)
