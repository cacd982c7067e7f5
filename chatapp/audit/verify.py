"""Walking the chain: the first broken link, named by seq and by what is wrong with it."""

from __future__ import annotations

from dataclasses import dataclass

from chatapp.audit.chain import GENESIS, row_hash
from chatapp.audit.content import first_content_mismatch
from chatapp.blobs import tampered
from chatapp.models import AuditEvent


@dataclass(frozen=True)
class Break:
    seq: int
    # "hash_mismatch" | "prev_hash_mismatch" | "gap" | "anchor_*" | "content_mismatch" | "blob_mismatch"
    problem: str
    detail: str

    def __str__(self) -> str:
        return f"seq {self.seq}: {self.detail}"


@dataclass(frozen=True)
class Verification:
    count: int
    head_seq: int
    head_hash: str
    broken: Break | None = None

    @property
    def ok(self) -> bool:
        return self.broken is None


def verify_chain(
    *, anchor: tuple[int, str] | None = None, chunk_size: int = 2000, content: bool = True
) -> Verification:
    """Check every row in seq order; stop at the first problem. Then, with ``content``, check that
    the runs, rounds, tool calls and approvals still hold what the chain pinned (``content.py``).

    ``anchor`` is a (seq, hash) pair recorded earlier outside the database: the row must still exist
    with that hash, which catches truncation and rows removed from the end of the chain.
    """
    result = _verify_links(anchor, chunk_size)
    if result.ok and content:
        mismatch = first_content_mismatch()
        if mismatch is not None:
            broken = Break(mismatch.seq, "content_mismatch", f"content edited: {mismatch}")
            return Verification(result.count, result.head_seq, result.head_hash, broken)
        edited = tampered()
        if edited:
            # Rows pinned by the chain read their large values through these (blobs.py): an edited one
            # is named above by the row it changes; this also covers the events no chain row pins.
            detail = f"large value {edited[0]} no longer hashes to its address ({len(edited)} edited)"
            return Verification(
                result.count,
                result.head_seq,
                result.head_hash,
                Break(result.head_seq, "blob_mismatch", detail),
            )
    return result


def _verify_links(anchor: tuple[int, str] | None, chunk_size: int) -> Verification:
    count, prev_seq, prev_hash = 0, 0, GENESIS
    anchored = anchor is None
    for row in AuditEvent.objects.order_by("seq").iterator(chunk_size=chunk_size):
        problem = _check(row, prev_seq, prev_hash)
        if problem is not None:
            return Verification(count, prev_seq, prev_hash, problem)
        if anchor is not None and row.seq == anchor[0]:
            if row.hash != anchor[1]:
                detail = f"hash {row.hash} differs from the anchored {anchor[1]} (chain rewritten)"
                return Verification(count, prev_seq, prev_hash, Break(row.seq, "anchor_mismatch", detail))
            anchored = True
        count, prev_seq, prev_hash = count + 1, row.seq, row.hash
    if not anchored:
        assert anchor is not None
        detail = f"anchored seq {anchor[0]} is missing: the chain ends at seq {prev_seq} (rows removed)"
        return Verification(count, prev_seq, prev_hash, Break(anchor[0], "anchor_missing", detail))
    return Verification(count, prev_seq, prev_hash)


def _check(row: AuditEvent, prev_seq: int, prev_hash: str) -> Break | None:
    if row.seq != prev_seq + 1:
        missing = f"seq {prev_seq + 1}" if row.seq == prev_seq + 2 else f"seqs {prev_seq + 1}..{row.seq - 1}"
        detail = f"missing seq (gap): {missing} deleted, the next row present is seq {row.seq}"
        return Break(prev_seq + 1, "gap", detail)
    computed = row_hash(row)
    if computed != row.hash:
        return Break(
            row.seq,
            "hash_mismatch",
            f"payload edited (hash mismatch): stored {row.hash}, recomputed {computed}",
        )
    if row.prev_hash != prev_hash:
        return Break(
            row.seq,
            "prev_hash_mismatch",
            f"prev_hash mismatch: it holds {row.prev_hash} but seq {prev_seq} hashes to {prev_hash}"
            f"{' (genesis)' if prev_seq == 0 else ''}",
        )
    return None
