"""Frames the page receives are bounded, whatever the run produced (review M6, issue 16 item 8).

daphne closes a websocket with 1011 for a message over 1 MiB (autobahn's payload limit), and the
page then reconnects for ever. So every frame sent to the page - live or replayed - is cut to
``FRAME_MAX_BYTES``: long strings are folded to their head with the size named, and a frame still too
big keeps only its small fields. Streamed text is never folded: the recorder splits it across
several delta frames instead (``split_text``), so the page's text always equals the stored text.
The stored rows keep everything; the trace pages and exports show it.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from chatapp import json_text

FOLD_HEAD = 2000  # characters kept of a folded string


def _limits() -> tuple[int, int]:
    frame_max = settings.FRAME_MAX_BYTES
    return frame_max, max(FOLD_HEAD + 200, frame_max // 16)


def fold_text(value: str, limit: int) -> str:
    if len(value) <= limit:
        return value
    size = len(value.encode("utf-8", "replace"))
    return value[:FOLD_HEAD] + f"… [folded: {size:,} bytes in all; the run's trace has the whole value]"


def _fold(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return fold_text(value, limit)
    if isinstance(value, dict):
        return {k: _fold(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_fold(v, limit) for v in value]
    return value


def _encoded_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str).encode("utf-8", "replace"))


def encoded_frame(frame: dict[str, Any]) -> str:
    """The frame's JSON text as the page may receive it, encoded once when it fits (almost always)."""
    data = json_text.dumps_bytes(frame)
    if len(data) <= settings.FRAME_MAX_BYTES:
        return data.decode("utf-8", "replace")
    return json_text.dumps(bounded_frame(frame))


def bounded_frame(frame: dict[str, Any]) -> dict[str, Any]:
    """The frame as the page may receive it: at most ``FRAME_MAX_BYTES`` once encoded."""
    frame_max, limit = _limits()
    if _encoded_size(frame) <= frame_max:
        return frame
    data = frame.get("data") or {}
    kept_text = {k: data[k] for k in ("text", "reasoning") if frame.get("type") == "delta" and k in data}
    folded = _fold({k: v for k, v in data.items() if k not in kept_text}, limit) | kept_text
    bounded = {**frame, "data": folded}
    size = _encoded_size(bounded)
    if size <= frame_max:
        return bounded
    # Many medium strings (a long request history): keep what the page uses - names, kinds, states.
    small = {k: v for k, v in folded.items() if _is_small(v)} | kept_text
    return {**frame, "data": small | {"folded_bytes": size}}


def _is_small(value: Any) -> bool:
    return (
        value is None
        or isinstance(value, bool | int | float)
        or (isinstance(value, str) and len(value) <= 200)
    )


def split_text(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """A delta payload whose text would not fit one frame, as several payloads in order."""
    step = max(1024, settings.FRAME_MAX_BYTES // 8)  # characters: at most 4 bytes each, with room
    text, reasoning = payload.get("text", ""), payload.get("reasoning", "")
    if len(text) <= step and len(reasoning) <= step:
        return [payload]
    parts = []
    for start in range(0, max(len(text), len(reasoning)), step):
        parts.append(
            {**payload, "text": text[start : start + step], "reasoning": reasoning[start : start + step]}
        )
    for later in parts[1:]:
        later["tool_calls"] = []
    return parts


def fold_stored_delta(payload: dict[str, Any]) -> dict[str, Any]:
    """Tool-argument fragments of a delta frame are stored folded: the whole arguments are stored
    with the call and the round's response; keeping them here too stored a large argument twice more."""
    _, limit = _limits()
    calls = payload.get("tool_calls") or []
    if not any(len(c.get("arguments", "")) > limit for c in calls):
        return payload
    return {
        **payload,
        "tool_calls": [{**c, "arguments": fold_text(c.get("arguments", ""), limit)} for c in calls],
    }
