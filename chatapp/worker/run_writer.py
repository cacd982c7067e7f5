"""Storing one run's frames while this worker holds its lease, each numbered from the run's sequence.

Live frames (deltas, links, progress) go to the worker's cross-run batch (``frame_batch``), which
stores and publishes them together with the other runs' frames. Durable events are written with the
domain rows they change in one transaction that first checks the lease (``store.persist_durable_batch``;
several events of one step share it when the recorder held some, ``recorder.held_until_next``); the
caller publishes them once this returns. Numbers come from one ``Sequence`` per segment (no query
per frame): the lease makes this worker the run's only writer (``event_log``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from agent import events as ev
from chatapp import frames
from chatapp.event_codec import event_payload, event_type
from chatapp.event_log import Sequence
from chatapp.redaction import redact
from chatapp.worker import crash, store
from chatapp.worker.publisher import LiveFrame
from chatapp.worker.runtime import WorkerRuntime

# A live frame as stored with durable events: (seq, kind, payload).
LiveRow = tuple[int, str, dict[str, Any]]
# The events that end a run: stored a few at a time per worker (``WorkerRuntime.end_slots``).
ENDS = (ev.RunFinished, ev.RunFailed)


@dataclass(frozen=True)
class StoredEvent:
    """A durable event as written: its number, kind and stored payload, and the status frames of the
    move it made (already numbered and stored, published after it)."""

    seq: int
    kind: str
    payload: dict[str, Any]
    moved: list[frames.Frame]


class RunWriter:
    def __init__(self, runtime: WorkerRuntime, run_id: int, group: str, last_seq: int, lease: str) -> None:
        self.runtime = runtime  # its ``db`` (the ORM threads) and ``frames`` (the cross-run batch)
        self.run_id = run_id
        self.group = group
        self.lease = lease  # durable writes are refused (store.LeaseLost) once another worker holds it
        self.seqs = Sequence(last_seq, lease)  # a pause checks the lease too (event_log)
        self.latency = 0.0  # seconds the last live frame took to store: the coalescer widens with it

    async def live(self, kind: str, payload: dict[str, Any]) -> int:
        """Store and publish one live frame; returns its number."""
        seq, kind, payload = self.number_live(kind, payload)
        started = time.monotonic()
        await self.runtime.frames.put(LiveFrame(self.run_id, seq, kind, payload, self.group))
        self.latency = time.monotonic() - started
        return seq

    def prepare(self, event: ev.Event, extra: dict[str, Any]) -> store.DurableItem:
        """Number and redact a durable event for storing (now, or with the next ones: ``store``)."""
        # The replay blocks are stored as received (they go back to the provider); what is logged
        # and published is the shown form.
        kind, payload = event_type(event), redact(event_payload(event), keep_replay=True)
        if isinstance(event, ev.ToolCallChanged) and event.status == "running":
            # When the engine started the call (wall clock, seconds): its row is stored later, and
            # later still under load, so the timeline starts the call's bar here (views/timeline.py).
            payload = {**payload, "started_at": round(time.time(), 3)}
        return store.DurableItem(self.seqs.next(), kind, payload, event, extra)

    def number_live(self, kind: str, payload: dict[str, Any]) -> LiveRow:
        """Number and redact a live frame that is stored with the next durable events (``store``)."""
        return (self.seqs.next(), kind, redact(payload))

    async def durable(self, event: ev.Event, extra: dict[str, Any]) -> StoredEvent:
        return (await self.store([self.prepare(event, extra)]))[-1]

    async def _persist(self, items: list[store.DurableItem], live: list[LiveRow]) -> list[frames.Frame]:
        return await self.runtime.db(
            store.persist_durable_batch, self.run_id, items, self.lease, self.seqs, live
        )

    async def store(
        self, items: list[store.DurableItem], live: list[LiveRow] | None = None
    ) -> list[StoredEvent]:
        """Store prepared events in one transaction, in order, with the ``live`` frames numbered
        before them; the status frames of the moves they made come with the last (only an event that
        ends a batch moves the run)."""
        live = live or []
        if isinstance(items[-1].event, ENDS):
            async with self.runtime.end_slots:  # a burst of ends leaves the loop its share (runtime.py)
                moved = await self._persist(items, live)
        else:
            moved = await self._persist(items, live)
        for _, kind, payload in live:
            crash.after_stored(kind, payload)
        for item in items:
            crash.after_stored(item.kind, item.payload)
        last = len(items) - 1
        return [
            StoredEvent(item.seq, item.kind, item.payload, moved if i == last else [])
            for i, item in enumerate(items)
        ]
