"""The per-run event log: numbering and storing frames (``RunEvent`` rows).

One allocator of ``seq`` serves both producers. ``Sequence`` hands out the numbers after the last
one stored (``last_stored_seq``: the larger of ``Run.last_seq`` and the largest row, because
ephemeral rows do not move ``last_seq``). Whoever writes must hold the run: the worker that holds its
lease keeps one ``Sequence`` for the whole segment (numbers in memory, no query per frame); anyone
else (an approval, a cancel, taking the lease) makes one under the run's row lock.

The worker's numbers are its own only while the run is ``running`` under its lease. The move that
hands the run over (a pause for an approval or a sign-in, the end) closes its ``Sequence``: from then
on the web side numbers (an approval can land the moment the pause commits, while the segment is still
ending), so any later write of that segment is refused with ``LeaseLost`` instead of taking a number
an approval already took (the duplicate ``seq`` the chaos test found). A worker's pause also checks
its lease (``Sequence.lease``), so a segment whose lease lapsed cannot pause its successor's run.

Rows may commit out of order (parallel tool calls write from different DB threads): readers take
the maximum, and the browser holds back a frame until the ones before it have arrived. A segment that
dies (or loses its lease) between two such commits leaves a number that will never be written: the
browser would hold every later frame of the run for good (the chaos test's client that never saw its
answer). Whoever numbers frames after a segment (``Sequence.after_stored``: taking the lease, an
approval, stopping or failing a run nobody drives) first writes a ``gap`` frame for each missing
number below the largest; while a segment runs, nobody else numbers, so a gap it will still fill is
never taken for a lost one.
"""

from __future__ import annotations

import itertools
from typing import Any

from django.conf import settings
from django.db import connections
from django.db.models import Count, Max, Q, Subquery
from django.utils import timezone

from chatapp import blobs
from chatapp.bound_cursor import bound_cursor
from chatapp.frames import Frame, Kind, frame
from chatapp.models import ACTIVE_STATUSES, Run, RunEvent
from chatapp.nul import encoded_without_nul, without_nul
from chatapp.redaction import shown


class LeaseLost(Exception):
    """The run is not this segment's to write any more: another worker holds its lease, or this
    segment handed it over (paused or ended it). The segment stops without writing."""


class Sequence:
    """The next frame numbers of one run. ``next`` is safe from several threads (``itertools.count``
    is atomic under the GIL), so the runtime's DB threads and its event loop can share one.

    ``lease``: the worker's lease, for the writes that check it (a pause). ``close`` ends the numbering
    when the run is handed over; ``next`` then raises ``LeaseLost``.
    """

    def __init__(self, last: int, lease: str = "") -> None:
        self._numbers = itertools.count(last + 1)
        self.lease = lease
        self.closed_at: int | None = None

    def next(self) -> int:
        if self.closed_at is not None:
            raise LeaseLost(
                f"this segment handed its run over at seq {self.closed_at}; "
                "its numbers are not its own any more"
            )
        return next(self._numbers)

    def close(self, at: int) -> None:
        self.closed_at = at

    @classmethod
    def after_stored(cls, run_id: int) -> Sequence:
        """Numbers after the stored ones, for a writer that is not the run's segment (under the run's
        row lock): the numbers a dead segment left unwritten are filled first (``fill_gaps``)."""
        return cls(fill_gaps(run_id))


def _stored_extent(run_id: int) -> tuple[int, int, int]:
    """``(Run.last_seq, largest stored seq, rows stored)`` in one round trip."""
    rows = RunEvent.objects.filter(run_id=run_id).order_by().values("run_id")
    largest = rows.annotate(m=Max("seq")).values("m")
    count = rows.annotate(n=Count("seq")).values("n")
    row = (
        Run.objects.filter(pk=run_id)
        .values_list("last_seq", Subquery(largest[:1]), Subquery(count[:1]))
        .first()
    )
    return (row[0] or 0, row[1] or 0, row[2] or 0) if row else (0, 0, 0)


def last_stored_seq(run_id: int) -> int:
    # The larger of the run's ``last_seq`` and its largest row (ephemeral rows do not move the former).
    last, largest, _ = _stored_extent(run_id)
    return max(last, largest)


def fill_gaps(run_id: int) -> int:
    """Write a ``gap`` frame for every number below the largest stored one that has no row; returns
    the last stored number. Sequence numbers are unique per run, so the count tells whether any is
    missing without reading them (the usual case: one query)."""
    last, largest, count = _stored_extent(run_id)
    if count < largest:
        have = set(RunEvent.objects.filter(run_id=run_id).values_list("seq", flat=True))
        missing = [seq for seq in range(1, largest + 1) if seq not in have]
        RunEvent.objects.bulk_create(
            [RunEvent(run_id=run_id, seq=seq, type=str(Kind.GAP), payload={}) for seq in missing],
            ignore_conflicts=True,  # a late write of the lost segment won the race: its frame stays
        )
    return max(last, largest)


def append_durable(
    run_id: int,
    rows: list[tuple[int, str, dict[str, Any]]],
    live: list[tuple[int, str, dict[str, Any]]] | None = None,
) -> None:
    """Store several durable frames of one run, ``(seq, kind, data)``, in one INSERT inside the
    caller's transaction (a worker's step, whose first statement moved ``Run.last_seq`` past them
    with its lease check: ``worker/store.py``). ``live``: frames that are not durable (the deltas the
    step's first event ends) stored in the same INSERT, marked as such."""
    live = live or []
    both = [*live, *rows]
    flags = [False] * len(live) + [True] * len(rows)
    insert_rows([(run_id, seq, str(kind), data) for seq, kind, data in both], durable=flags, using="default")


# The table name is the model's own, not input. created_at is this process's clock, as the model's
# auto_now_add sets it on every other path: a run's timeline compares rows written by both.
_UNNEST_INSERT = (
    f"INSERT INTO {RunEvent._meta.db_table} (run_id, seq, type, payload, durable, created_at) "  # noqa: S608
    "SELECT r, s, t, p, d, %s "
    "FROM unnest(%b::bigint[], %b::integer[], %b::text[], %b::text[]::jsonb[], %b::boolean[]) "
    "AS f(r, s, t, p, d)"
)


def insert_rows(
    rows: list[tuple[int, int, str, dict[str, Any]]], *, durable: bool | list[bool], using: str
) -> None:
    """``(run_id, seq, kind, data)`` rows in one INSERT (``durable``: for all, or row by row). On
    PostgreSQL the columns go as five arrays (``unnest``), each one parameter: the ORM's
    ``bulk_create`` built and quoted six parameters per row in Python, the largest item of a
    streaming worker's profile (docs/performance.md). Each payload is encoded once (``json_text``)
    and the arrays are bound by the server in binary (``bound_cursor``): quoting them client-side
    was the next largest (session 15). Long strings go to ``Blob`` exactly as the model field does it
    on save (``LargeValuesJSONField``)."""
    if not rows:
        return
    flags = [durable] * len(rows) if isinstance(durable, bool) else durable
    connection = connections[using]
    if connection.vendor != "postgresql":
        made = [
            RunEvent(run_id=r, seq=s, type=k, payload=without_nul(d), durable=flag)
            for (r, s, k, d), flag in zip(rows, flags, strict=True)
        ]
        RunEvent.objects.using(using).bulk_create(made)
        return
    payloads = [_stored_json(d, using) for _, _, _, d in rows]
    runs = [r for r, _, _, _ in rows]
    seqs = [s for _, s, _, _ in rows]
    kinds = [k for _, _, k, _ in rows]
    params: list[Any] = [timezone.now(), runs, seqs, kinds, payloads, flags]
    with bound_cursor(connection) as cursor:
        cursor.execute(_UNNEST_INSERT, params)


def _stored_json(data: dict[str, Any], using: str) -> str:
    value, text = encoded_without_nul(data)
    return blobs.packed_json(value, using, text)


def append(run_id: int, seq: int, kind: str, data: dict[str, Any], *, durable: bool) -> Frame:
    """Store one frame. Durable rows go through "default" (inside the caller's transaction, if any)
    and move ``Run.last_seq``; ephemeral ones use the "deltas" connection (no fsync wait, see
    settings.DELTA_DB) and leave the run row alone, which keeps a streamed token to one write."""
    using = "default" if durable else settings.DELTA_DB
    data = without_nul(data)  # PostgreSQL cannot store NUL characters
    RunEvent.objects.using(using).create(
        run_id=run_id, seq=seq, type=str(kind), payload=data, durable=durable
    )
    if durable:
        Run.objects.filter(pk=run_id, last_seq__lt=seq).update(last_seq=seq)
    return frame(run_id, seq, kind, data)


def streamed_so_far(run_id: int) -> tuple[str, int]:
    """A streaming run's text as its page shows it (its delta frames' text, in order) and the number
    of its last frame, read in one statement (one snapshot): the page renders the text and its socket
    resumes after that number, so nothing is shown twice or missed. (0 when nothing is stored.)"""
    last = RunEvent.objects.filter(run_id=run_id).order_by("-seq").values("seq")[:1]
    rows = (
        RunEvent.objects.filter(run_id=run_id)
        .filter(Q(type=Kind.DELTA) | Q(seq=Subquery(last)))
        .order_by("seq")
        .values_list("seq", "type", "payload")
    )
    text, last_seq = [], 0
    for seq, kind, payload in rows:
        last_seq = seq  # in order: the last row is the run's last frame
        if kind == Kind.DELTA:
            text.append(str(shown(payload).get("text") or ""))
    return "".join(text), last_seq


def stored_frames(
    conversation_id: int, positions: dict[int, int], since_run: int | None, limit: int
) -> list[Frame]:
    """Stored frames of a conversation newer than what a client has (``positions``: run -> last seq).
    Without positions or ``since_run``, the frames of its active runs."""
    events = RunEvent.objects.filter(run__conversation_id=conversation_id)
    floor = since_run if since_run is not None else (min(positions) if positions else None)
    if floor is not None:
        events = events.filter(run_id__gte=floor)
    else:
        events = events.filter(run__status__in=ACTIVE_STATUSES)
    for run_id, last in positions.items():
        # In the query, before the limit: a client holding more than `limit` frames of a run would
        # otherwise get the first `limit` (all of which it has) and never the ones it lacks.
        events = events.exclude(run_id=run_id, seq__lte=last)
    rows = events.order_by("run_id", "seq").values_list("run_id", "seq", "type", "payload")[:limit]
    # Frames go out in their shown form (stored replay blocks and media bytes stay in the rows).
    return [frame(run_id, seq, kind, shown(data)) for run_id, seq, kind, data in rows]
