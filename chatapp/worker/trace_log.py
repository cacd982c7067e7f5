"""One structured log record per stored event of a run (R-RUN-6): requests, tool calls, results and
token counts. Secrets are redacted before (the recorder logs the shown payload) and again by the
logging filter configured in settings."""

from __future__ import annotations

import json
import logging
from typing import Any

from chatapp.frame_limits import fold_text

trace_log = logging.getLogger("clearloop.trace")
LOG_TEXT_MAX = 4000  # characters of one string kept in a log record


def log_event(run_id: int, seq: int, kind: str, payload: dict[str, Any]) -> None:
    trace_log.info(structured(run_id, seq, kind, payload))


def _request_summary(request: dict[str, Any]) -> dict[str, Any]:
    # The whole request is in the database; the log line names what was sent without repeating it.
    wire = request.get("wire") or {}
    return {
        "url": wire.get("url"),
        "messages": len(request.get("messages") or []),
        "tools": [t.get("name") for t in request.get("tools") or []],
        "tool_choice": request.get("tool_choice"),
        "estimated_input_tokens": request.get("estimated_input_tokens"),
    }


def structured(run_id: int, seq: int, kind: str, payload: dict[str, Any]) -> str:
    record: dict[str, Any] = {"run": run_id, "seq": seq, "event": kind}
    if kind == "round_finished":
        record |= {
            "round": payload["round_index"],
            "model": payload["model"],
            "provider": payload["provider"],
            "finish": payload["finish_reason"],
            "finish_raw": payload["finish_reason_raw"],
            "usage": {k: v for k, v in payload["usage"].items() if k != "raw"},
            "ttft_ms": payload["ttft_ms"],
            "duration_ms": payload["duration_ms"],
            "request": _request_summary(payload["request"]),
        }
    elif kind == "tool_call":
        record |= {
            k: payload.get(k)
            for k in (
                "round_index",
                "call_id",
                "name",
                "server",
                "status",
                "arguments",
                "result",
                "error_code",
                "duration_ms",
            )
        }
    else:
        record |= payload
    # A 1 MB argument or result is in the database once (blobs.py); each status of its call would
    # repeat it here: the log keeps the head and names the size, like a folded frame.
    return json.dumps(_folded(record), ensure_ascii=False, default=str)


def _folded(value: Any) -> Any:
    if isinstance(value, str):
        return fold_text(value, LOG_TEXT_MAX)
    if isinstance(value, dict):
        return {k: _folded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_folded(v) for v in value]
    return value
