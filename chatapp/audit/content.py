"""Checking what auditors read against what the chain pinned (issue 16, M7).

Each run, round, tool call and approval event in the chain carries digests of the row's stored content
(``describe`` in ``log.py``: request/response, arguments/result, the final text and answer, the
approval's decision, reason and definition). The last event about a row pins its current content:
this module recomputes the same description from the row as it is now and names the first row
(in chain order of its pinning event) whose content no longer matches. Fields that change without a
new event (a run's status, token counts ...) are not compared: only content digests and the
approval's decision, reason, definition hash and decider.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from chatapp.audit.chain import normalise
from chatapp.models import Approval, AuditEvent, Round, Run, ToolCall
from chatapp.redaction import redact

_APPROVAL_FIELDS = ("decision", "reason", "definition_hash")


@dataclass(frozen=True)
class ContentMismatch:
    seq: int  # the chain row that pins the content
    row: str  # "run 5", "run 5 round 1", "run 5 tool call 0/1 (call_x)", "approval of call 12"
    fields: tuple[str, ...]

    def __str__(self) -> str:
        what = ", ".join(self.fields)
        return f"{self.row}: {what} no longer match(es) what the chain pinned at seq {self.seq}"


def _key(event: AuditEvent) -> tuple | None:
    p = event.payload or {}
    if event.kind in ("run_created", "run_finished"):
        return ("run", event.run_id)
    if event.kind == "round_stored":
        return ("round", event.run_id, p.get("round_index"))
    if event.kind == "tool_call_status":
        return ("call", event.run_id, p.get("round_index"), p.get("index"))
    if event.kind in ("approval", "approval_voided"):
        return ("approval", event.run_id, p.get("call_id"))
    return None


def _latest() -> dict[tuple, AuditEvent]:
    latest: dict[tuple, AuditEvent] = {}
    for event in AuditEvent.objects.order_by("seq").iterator(chunk_size=2000):
        key = _key(event)
        if key is not None:
            latest[key] = event
    return latest


def _current(key: tuple) -> tuple[str, Any]:
    from chatapp.audit.log import describe

    kind = key[0]
    if kind == "run":
        row = Run.objects.filter(pk=key[1]).first()
        return f"run {key[1]}", row and describe(row, as_stored=True)
    if kind == "round":
        stored = Round.objects.filter(run_id=key[1], index=key[2]).first()
        return f"run {key[1]} round {key[2]}", stored and describe(stored)
    if kind == "call":
        call = ToolCall.objects.filter(run_id=key[1], round_index=key[2], index=key[3]).first()
        return f"run {key[1]} tool call {key[2]}/{key[3]}", call and describe(call)
    approval = (
        Approval.objects.filter(tool_call__run_id=key[1], tool_call__call_id=key[2])
        .select_related("tool_call", "decided_by")
        .first()
    )
    label = f"run {key[1]} approval of call {key[2]}"
    if approval is None:
        return label, None
    return label, describe(approval) | {"actor": approval.decided_by.get_username()}


def _compared(event: AuditEvent) -> list[str]:
    names = [k for k in (event.payload or {}) if k.endswith("_sha256")]
    if event.kind == "approval":
        names += [k for k in _APPROVAL_FIELDS if k in event.payload] + ["actor"]
    return names


def content_mismatches() -> Iterator[ContentMismatch]:
    """Every row whose content differs from its last pinning event, in chain order."""
    latest = _latest()
    runs = set(Run.objects.filter(pk__in={key[1] for key in latest}).values_list("pk", flat=True))
    for key, event in sorted(latest.items(), key=lambda item: item[1].seq):
        if event.kind == "approval_voided":
            continue  # the approval was withdrawn on purpose (its row is gone); nothing to compare
        if key[1] not in runs:
            # Deleting a conversation deletes its runs; the chain keeps their digests (docs/audit.md).
            continue
        label, now = _current(key)
        if now is None:
            yield ContentMismatch(event.seq, label, ("the row (deleted)",))
            continue
        expected = dict(event.payload) | {"actor": event.actor}
        current = normalise(redact(now))
        changed = tuple(k for k in _compared(event) if current.get(k) != expected.get(k))
        if changed:
            yield ContentMismatch(event.seq, label, changed)


def first_content_mismatch() -> ContentMismatch | None:
    return next(content_mismatches(), None)
