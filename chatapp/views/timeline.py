"""The run as a waterfall: one row per round and per tool call on a shared time axis.

Built from the run's own event rows (the frames the page already received, with the time each was
stored): one query per run, reading only the few payload keys it needs (never a round's request).
``static/js/timeline.js`` draws it from the JSON this returns; times are milliseconds from the run's
first event (when each frame was stored, so a bar includes the storing; the engine's own measured
duration is the row's ``took``, shown as its text). Parallel calls overlap on the axis because each
call's bar runs from when the engine started it (the ``started_at`` its ``running`` frame carries;
the row itself may be stored after the other call has ended, on a busy worker) to its own outcome.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.utils.translation import gettext as _

from chatapp.models import Run, RunEvent

KINDS = (
    "round_started",
    "round_retried",
    "round_finished",
    "tool_call",
    "approval_decided",
    "run_finished",
    "run_failed",
)
ENDED = {"succeeded", "failed", "unknown", "denied", "invalid"}


def _ms(at: datetime, t0: datetime) -> float:
    return round((at - t0).total_seconds() * 1000, 1)


def _started(e: dict[str, Any], at: float, t0: datetime) -> float:
    """When the engine started a call (rows stored before ``started_at`` existed: when stored)."""
    started = e["payload__started_at"]
    if not isinstance(started, (int, float)):
        return at
    return min(at, max(0.0, _ms(datetime.fromtimestamp(started, tz=UTC), t0)))


_FIELDS = (
    "type",
    "created_at",
    "payload__round_index",
    "payload__call_id",
    "payload__status",
    "payload__name",
    "payload__finish_reason",
    "payload__ttft_ms",
    "payload__attempts",
    "payload__duration_ms",
    "payload__started_at",
    "payload__usage__prompt_tokens",
    "payload__usage__completion_tokens",
    "payload__attempt",
    "payload__error_class",
    "payload__wait_ms",
    "payload__decision",
    "payload__by",
    "payload__reason",
)


def _events(run: Run) -> list[dict[str, Any]]:
    rows = RunEvent.objects.filter(run=run, type__in=KINDS).order_by("seq").values(*_FIELDS)
    return [dict(row) for row in rows]


def events_of(run_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """The waterfall events of several runs in one query (a conversation page's runs), by run."""
    rows = (
        RunEvent.objects.filter(run_id__in=run_ids, type__in=KINDS)
        .order_by("run_id", "seq")
        .values("run_id", *_FIELDS)
    )
    out: dict[int, list[dict[str, Any]]] = {run_id: [] for run_id in run_ids}
    for row in rows:
        out[row.pop("run_id")].append(row)
    return out


def _round_row(rows: dict, index: int) -> dict[str, Any]:
    return rows.setdefault(
        ("round", index),
        {
            "kind": "round",
            "key": f"round-{index}",
            "label": _("Round %(n)s") % {"n": index + 1},
            "round": index,
            "start": None,
            "end": None,
            "ttft": None,
            "finish": "",
            "tokens": None,  # [prompt, completion] once the round finished
            "retries": [],  # each failed attempt: when it failed, the wait before the next, why
        },
    )


def _call_row(rows: dict, e: dict[str, Any]) -> dict[str, Any]:
    call_id = e["payload__call_id"]
    return rows.setdefault(
        ("call", call_id),
        {
            "kind": "call",
            "key": f"call-{call_id}",
            "call_id": call_id,
            "label": e["payload__name"] or "?",
            "round": e["payload__round_index"],
            "start": None,
            "end": None,
            "wait": None,
            "status": "",
            "attempts": 0,
            "tries": [],  # when each try started running (a retry is a new "running")
            "decision": None,  # {"decision", "by", "reason"} when a person decided it
        },
    )


def _apply_call(row: dict[str, Any], e: dict[str, Any], at: float, t0: datetime) -> None:
    status = e["payload__status"] or ""
    if status == "running":
        at = _started(e, at, t0)
    row["status"] = status
    row["attempts"] = max(row["attempts"], e["payload__attempts"] or 0)
    if status == "awaiting_approval":
        row["wait"] = [at, None]
    elif row["wait"] and row["wait"][1] is None and status in ("approved", "denied", "running"):
        row["wait"][1] = at
    if status == "running":
        row["tries"].append(at)
        if row["start"] is None:
            row["start"] = at
    if status in ENDED:
        row["end"], row["took"] = at, e["payload__duration_ms"]
        if row["start"] is None:
            row["start"] = row["wait"][0] if row["wait"] else at


def timeline_of_nothing() -> dict[str, Any]:
    """The waterfall of a run with no stored event yet."""
    return {"total_ms": 0, "rows": []}


def timeline(run: Run, events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """``events``: the run's, read already with others' (``events_of``); else read here."""
    events = _events(run) if events is None else events
    if not events:
        return timeline_of_nothing()
    t0 = events[0]["created_at"]
    rows: dict[tuple, dict[str, Any]] = {}
    for e in events:
        at = _ms(e["created_at"], t0)
        kind = e["type"]
        if kind == "round_started":
            row = _round_row(rows, e["payload__round_index"] or 0)
            row["start"] = at if row["start"] is None else row["start"]
        elif kind == "round_retried":
            row = _round_row(rows, e["payload__round_index"] or 0)
            row["retries"].append(
                {"at": at, "wait": e["payload__wait_ms"] or 0, "error": e["payload__error_class"] or ""}
            )
        elif kind == "round_finished":
            row = _round_row(rows, e["payload__round_index"] or 0)
            row["end"], row["finish"], row["ttft"] = (
                at,
                e["payload__finish_reason"] or "",
                e["payload__ttft_ms"],
            )
            prompt, completion = e["payload__usage__prompt_tokens"], e["payload__usage__completion_tokens"]
            if prompt is not None or completion is not None:
                row["tokens"] = [prompt, completion]
            if row["start"] is None:
                row["start"] = at
        elif kind == "tool_call" and e["payload__call_id"]:
            _apply_call(_call_row(rows, e), e, at, t0)
        elif kind == "approval_decided" and ("call", e["payload__call_id"]) in rows:
            rows[("call", e["payload__call_id"])]["decision"] = {
                "decision": e["payload__decision"] or "",
                "by": e["payload__by"] or "",
                "reason": (e["payload__reason"] or "")[:200],
            }
    end = _ms(events[-1]["created_at"], t0)
    ordered = sorted(rows.values(), key=lambda r: (r["round"] or 0, r["kind"] != "round", r["start"] or 0))
    for row in ordered:  # still going: the bar reaches "now" (the last event)
        row["start"] = row["start"] if row["start"] is not None else end
        row["end"] = row["end"] if row["end"] is not None else end
        if row.get("wait") and row["wait"][1] is None:
            row["wait"][1] = row["end"]
    return {"total_ms": max(end, 1.0), "rows": ordered}
