"""Following a run's event log from outside the browser: the REST API's SSE stream and the
OpenAI-compatible stream read it here.

The event log in PostgreSQL is the source of truth; the conversation's live frames (its frame-bus
channel, the one the worker publishes every frame to) only wake the reader up. Each wake-up reads
the stored events after the last sequence number handed out, so every event is yielded once and in
order, whether it arrived live, while the reader was busy, or before it started (a resume with
``Last-Event-ID``).
If Redis is away the reader still polls the database once per ``POLL_SECONDS``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from django.db import InterfaceError, OperationalError

from chatapp.frame_follow import Follower
from chatapp.models import TERMINAL_STATUSES, Run, RunEvent
from chatapp.redaction import shown

log = logging.getLogger(__name__)
POLL_SECONDS = 1.0
BATCH = 500


@dataclass(frozen=True)
class StoredEvent:
    seq: int
    type: str
    data: dict[str, Any]


@dataclass(frozen=True)
class Idle:
    """Nothing new for a while: streams send a keep-alive comment."""


def _read(run_id: int, after: int) -> tuple[str, list[StoredEvent]]:
    # Called through channels' database_sync_to_async, which closes the connection after each read
    # (CONN_MAX_AGE): a stream open for an hour holds no database connection while it waits.
    # Status first: when it is terminal, every event of the run is stored already.
    status = Run.objects.filter(pk=run_id).values_list("status", flat=True).first() or "cancelled"
    rows = RunEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:BATCH]
    events = [StoredEvent(r.seq, r.type, shown(r.payload)) for r in rows]
    if status not in TERMINAL_STATUSES:
        events = _in_sequence(events, after)
    return status, events


def _in_sequence(events: list[StoredEvent], after: int) -> list[StoredEvent]:
    """The events up to the first missing number. Parallel tool calls commit their frames from
    different threads, so ``n + 1`` may be stored before ``n``: reading past the hole would move the
    position beyond ``n`` and never yield it. A number that stays missing (its worker died) is filled
    with a ``gap`` frame when the run is next taken or ended (``event_log.fill_gaps``)."""
    for i, event in enumerate(events):
        if event.seq != after + 1 + i:
            return events[:i]
    return events


async def follow(run_id: int, conversation_id: int, after: int = 0) -> AsyncIterator[StoredEvent | Idle]:
    """Every stored event with ``seq > after``, then live ones, until the run has ended."""
    live = await _listen(conversation_id)
    try:
        while True:
            try:
                status, events = await database_sync_to_async(_read)(run_id, after)
            except (OperationalError, InterfaceError):
                # The database is briefly unreachable (restart, connection limit): the events stay
                # stored, so wait and read again from the same position instead of dropping the stream.
                log.warning("run %s: reading events failed; retrying", run_id, exc_info=True)
                await asyncio.sleep(POLL_SECONDS)
                yield Idle()
                continue
            for event in events:
                after = event.seq
                yield event
            if len(events) == BATCH:
                continue
            if status in TERMINAL_STATUSES:
                return
            if not await _woken(live):
                yield Idle()
    finally:
        await _stop(live)


# The live frames only wake the reader up (``frame_follow.py``, as the browser's sockets get them):
# without Redis, or when it goes away, the reader polls the database instead of failing the stream.


async def _listen(conversation_id: int) -> Follower:
    live = Follower(conversation_id)
    try:
        await live.join()
    except Exception:  # noqa: BLE001 - no Redis: poll the database only
        log.warning("following %s without live wake-ups", live.group, exc_info=True)
    return live


async def _woken(live: Follower) -> bool:
    """True when a frame of the conversation arrived, or the bus subscription broke (frames published
    meanwhile are gone, so read now, then poll); False after POLL_SECONDS of silence."""
    try:
        return await live.wake(POLL_SECONDS)
    except Exception:  # noqa: BLE001 - Redis went away mid-wait: fall back to polling
        await asyncio.sleep(POLL_SECONDS)
        return False


async def _stop(live: Follower) -> None:
    try:
        await live.close()
    except Exception:  # noqa: BLE001 - Redis away: the membership expires with the group
        log.warning("leaving %s failed", live.group, exc_info=True)
