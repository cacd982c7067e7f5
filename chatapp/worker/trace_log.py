"""One structured log record per stored event of a run (R-RUN-6): requests, tool calls, results and
token counts. Secrets are redacted before (the recorder logs the shown payload) and again by the
logging filter configured in settings."""

from __future__ import annotations

import json
import logging
from typing import Any

trace_log = logging.getLogger("clearloop.trace")


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
    return json.dumps(record, ensure_ascii=False, default=str)
