"""The hash chain's canonical form: what exactly is hashed, so anyone can recompute it.

``hash = sha256(canonical_json(document))`` where the document is the row's ``seq``, ``kind``,
``actor``, ``run_id``, ``payload``, ``created_at`` (ISO 8601, UTC, microseconds) and ``prev_hash``;
canonical JSON has sorted keys, no whitespace and ``ensure_ascii=False``, encoded as UTF-8.
The first row's ``prev_hash`` is ``GENESIS``.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime
from typing import Any

GENESIS = "0" * 64


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def digest(value: Any) -> str:
    """The sha256 of a JSON value's canonical form (used to pin stored content in a payload)."""
    return sha256_hex(canonical_json(normalise(value)))


def iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def normalise(value: Any) -> Any:
    """A JSON value that survives a round trip through PostgreSQL ``jsonb`` unchanged.

    jsonb keeps numbers as decimals and refuses NUL characters, so a float such as ``1e+20`` would
    come back as an int and change the hash. Floats are rounded to microsecond-ish precision and
    very large or non-finite ones kept as text; NULs are dropped; keys become strings.
    """
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value) or abs(value) >= 1e15:
            return repr(value)
        rounded = round(value, 6)
        return 0.0 if rounded == 0 else rounded
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {str(k).replace("\x00", ""): normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalise(v) for v in value]
    return normalise(str(value))


def document(
    *, seq: int, kind: str, actor: str, run_id: int | None, payload: Any, created_at: datetime, prev_hash: str
) -> dict[str, Any]:
    return {
        "seq": seq,
        "kind": kind,
        "actor": actor,
        "run_id": run_id,
        "payload": payload,
        "created_at": iso(created_at),
        "prev_hash": prev_hash,
    }


def row_hash(row: Any) -> str:
    """The hash a stored ``AuditEvent`` row should carry, recomputed from its columns."""
    return sha256_hex(
        canonical_json(
            document(
                seq=row.seq,
                kind=row.kind,
                actor=row.actor,
                run_id=row.run_id,
                payload=row.payload,
                created_at=row.created_at,
                prev_hash=row.prev_hash,
            )
        )
    )
