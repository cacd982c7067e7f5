"""Appending to the audit chain.

``record`` is called inside the transaction that makes the change it records, so the audit row and
the change commit or roll back together. Appends are serialised so concurrent workers never fork the
chain: on PostgreSQL with a table lock on the audit table (held until the caller's transaction
ends, so call ``record`` last in it); SQLite runs write transactions one at a time already
(``transaction_mode`` IMMEDIATE). ``seq`` is unique as a last line of defence.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from chatapp import json_text
from chatapp.audit.chain import GENESIS, canonical_json, digest, document, normalise, sha256_hex
from chatapp.bound_cursor import bound_cursor
from chatapp.models import TERMINAL_STATUSES, Approval, AuditEvent, Round, Run, ToolCall
from chatapp.redaction import redact

SYSTEM = "system"
ENDED = frozenset(TERMINAL_STATUSES)


def record(
    kind: str,
    *,
    run_id: int | None = None,
    actor: str = SYSTEM,
    subject: Any = None,
    payload: dict[str, Any] | None = None,
) -> AuditEvent | None:
    """Append one event and return its row. ``subject`` (a Run, Round, ToolCall or Approval) is
    summarised into the payload, as it is now. Inside ``appended_together`` the row is chained when
    that block ends (and None is returned)."""
    # Redacted before it is chained: an append-only row holding a leaked secret could never be scrubbed.
    entry = _Entry(kind, actor, run_id, normalise(redact({**describe(subject), **(payload or {})})))
    pending = getattr(_together, "entries", None)
    if pending is not None:
        pending.append(entry)
        return None
    return _append([entry])[0]


@dataclass(frozen=True)
class _Entry:
    kind: str
    actor: str
    run_id: int | None
    payload: dict[str, Any]


_together = threading.local()


@contextmanager
def appended_together() -> Iterator[None]:
    """The appends ``record`` makes inside this block are chained when it ends, in their order, with
    one lock and one INSERT (a worker's step stores up to five events, each with its record: five
    lock-and-read round trips and five INSERTs before, docs/performance.md). It must run inside the
    transaction whose changes it records, and end last in it: the chain's lock is then held only from
    the append to the commit. Blocks nest (the outermost writes); an exception discards the entries,
    as the transaction that raised it rolls back."""
    if getattr(_together, "entries", None) is not None:
        yield
        return
    entries: list[_Entry] = []
    _together.entries = entries
    try:
        yield
    finally:
        _together.entries = None
    if entries:
        _append(entries)


def _append(entries: list[_Entry]) -> list[AuditEvent]:
    # Inside the caller's transaction (the usual case: the change being recorded) without a savepoint:
    # two round trips fewer per append (SAVEPOINT, RELEASE), on every send, lease, stored round and
    # tool call (docs/performance.md). A failure here fails the caller's transaction either way.
    with transaction.atomic(savepoint=False):
        if connection.vendor == "postgresql":
            return _append_in_one_call(entries)
        last = AuditEvent.objects.order_by("-seq").values_list("seq", "hash").first()
        seq = last[0] if last else 0
        prev_hash = last[1] if last else GENESIS
        rows = []
        for entry in entries:
            seq += 1
            fields: dict[str, Any] = {
                "seq": seq,
                "kind": entry.kind,
                "actor": entry.actor,
                "run_id": entry.run_id,
                "payload": entry.payload,
                "created_at": timezone.now(),
                "prev_hash": prev_hash,
            }
            # The row holds exactly what its hash covers (chain.document), plus the hash.
            prev_hash = sha256_hex(canonical_json(document(**fields)))
            rows.append(AuditEvent(**fields, hash=prev_hash))
        return AuditEvent.objects.bulk_create(rows)


# One call takes the chain's lock, reads its head, then stamps, numbers, hashes and inserts the rows
# (migration 0031): the lock, held until the caller commits, is no longer held across this process's
# Python between three round trips, where under load every appender of every process queued behind it
# (docs/performance.md, session 28). The function is the migration's own; the values are bound.
# A table lock, not an advisory lock: advisory locks are open to every role of the database, so the
# read-only SQL tool's role could take the chain's lock and stall every audited write (L4). SHARE ROW
# EXCLUSIVE conflicts with itself (appenders queue) but not with readers, and only a role with write
# privileges on the table may take it.
_APPEND = (
    "SELECT r_seq, r_id, r_created_at, r_prev_hash, r_hash FROM chatapp_audit_append("
    "%b::text[], %b::text[], %b::text[], %b::text[], %b::text[], %b::bigint[], %b::text[]::jsonb[])"
)


def canonical_cuts(entry: _Entry) -> tuple[str, str, str]:
    """The row's canonical JSON (chain.document) cut where the values known only under the chain's
    lock go: ``head + created_at + body + prev_hash + tail + seq + "}"`` is exactly what
    ``canonical_json(document(...))`` gives (keys sort as actor, created_at, kind, payload,
    prev_hash, run_id, seq)."""
    head = '{"actor":' + canonical_json(entry.actor) + ',"created_at":"'
    body = '","kind":' + canonical_json(entry.kind) + ',"payload":' + canonical_json(entry.payload)
    tail = '","run_id":' + canonical_json(entry.run_id) + ',"seq":'
    return head, body + ',"prev_hash":"', tail


def _append_in_one_call(entries: list[_Entry]) -> list[AuditEvent]:
    cuts = [canonical_cuts(entry) for entry in entries]
    params: list[Any] = [
        [c[0] for c in cuts],
        [c[1] for c in cuts],
        [c[2] for c in cuts],
        [e.kind for e in entries],
        [e.actor for e in entries],
        [e.run_id for e in entries],
        [json_text.dumps(e.payload) for e in entries],
    ]
    with bound_cursor(connection) as cursor:
        cursor.execute(_APPEND, params)
        stored = cursor.fetchall()
    rows = []
    for entry, (seq, pk, created_at, prev_hash, hash_) in zip(entries, stored, strict=True):
        row = AuditEvent(
            pk=pk,
            seq=seq,
            kind=entry.kind,
            actor=entry.actor,
            run_id=entry.run_id,
            payload=entry.payload,
            created_at=created_at,
            prev_hash=prev_hash,
            hash=hash_,
        )
        row._state.adding, row._state.db = False, connection.alias
        rows.append(row)
    return rows


def _run_answers(run: Run, as_stored: bool) -> list[str]:
    if as_stored:
        return _answers(run)
    if run.status not in ENDED:
        return []
    written = getattr(run, "answers_stored_now", None)
    return list(written) if written is not None else _answers(run)


def _answers(run: Run) -> list[str]:
    from chatapp.models import Message

    rows = Message.objects.filter(run_id=run.pk, role=Message.Role.ASSISTANT).order_by("id")
    return list(rows.values_list("content", flat=True))


def describe(subject: Any, *, as_stored: bool = False) -> dict[str, Any]:
    """What the chain pins about a domain row: identifying fields plus digests of stored content.

    A run's answers are stored with its end (``store._finish``, ``store._fail``), so a run that has not
    ended is pinned with none without reading them: one query fewer on every send, lease and
    non-terminal move. The worker's end stores them in the transaction it records, and says so on the
    row it moves (``Run.answers_stored_now``): they are pinned as written, not read back. ``as_stored``
    reads them whatever the status: the content check compares what is in the table now, where an
    answer slipped into a running run must show.
    """
    if subject is None:
        return {}
    if isinstance(subject, Run):
        return {
            "conversation_id": subject.conversation_id,
            "status": subject.status,
            "provider": subject.provider_name,
            "model": subject.model,
            "user_message_id": subject.user_message_id,
            "error_class": subject.error_class,
            "prompt_tokens": subject.prompt_tokens,
            "completion_tokens": subject.completion_tokens,
            "final_text_sha256": digest(subject.final_text),
            # What the conversation shows: the user's message and the stored answer(s) (M7).
            "user_message_sha256": digest(subject.user_message.content if subject.user_message else ""),
            "answer_sha256": digest(_run_answers(subject, as_stored)),
        }
    if isinstance(subject, Round):
        return {
            "round_index": subject.index,
            "kind": subject.kind,
            "provider": subject.provider_name,
            "model": subject.model,
            "finish_reason": subject.finish_reason,
            "usage": subject.usage,
            "request_sha256": digest(subject.request),
            "response_sha256": digest(subject.response),
        }
    if isinstance(subject, ToolCall):
        return {
            "round_index": subject.round_index,
            "index": subject.index,
            "call_id": subject.call_id,
            "name": subject.name,
            "server": subject.server,
            "status": subject.status,
            "risk": subject.risk,
            "is_error": subject.is_error,
            "error_code": subject.error_code,
            "attempts": subject.attempts,
            "duration_ms": subject.duration_ms,
            "arguments_sha256": digest(subject.arguments),
            "result_sha256": digest(subject.result),
        }
    if isinstance(subject, Approval):
        call = subject.tool_call
        return {
            "tool_call_id": call.pk,
            "call_id": call.call_id,
            "name": call.name,
            "round_index": call.round_index,
            "index": call.index,
            "decision": subject.decision,
            "reason": subject.reason,
            "definition_hash": subject.definition_hash,
        }
    raise TypeError(f"no audit description for {type(subject).__name__}")
