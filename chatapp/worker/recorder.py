"""The engine's Sink in the worker: it routes each event of one run segment to the part that does
one job with it.

- ``DeltaCoalescer`` (coalescer.py): token deltas, one DELTA frame per window, never one per token;
- ``RunWriter`` (run_writer.py): numbers and stores frames, durable rows under the run's lease;
- ``RunPublisher`` (publisher.py): publishes a stored durable event and the status move it made;
- ``RunBook`` (run_book.py): the partial text, the links asked, the tool definitions offered;
- ``trace_log``: one structured log record per stored event.

Durable rows first, then their frame, so a client that reconnects can always back-fill from the
database without a gap. Use it as ``async with RunRecorder(...) as recorder``: entering watches the
run for a user's stop (``cancels.py``), leaving stops watching.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from agent import events as ev
from agent.toolbox import LinkAnswer, LinkRequest
from chatapp import frames
from chatapp.event_codec import event_payload, event_type
from chatapp.event_log import Sequence
from chatapp.frames import Kind
from chatapp.redaction import redact_event, shown
from chatapp.worker import links, store
from chatapp.worker.coalescer import DELTAS, DeltaCoalescer
from chatapp.worker.publisher import RunPublisher
from chatapp.worker.run_book import RunBook
from chatapp.worker.run_writer import ENDS, LiveRow, RunWriter
from chatapp.worker.runtime import WorkerRuntime
from chatapp.worker.start_spans import StartSpans
from chatapp.worker.trace_log import log_event

# Tool-call statuses that describe a decision, not an effect: a call proposed, or approved (by the
# policy or a stored decision). Nothing outside the run happens between such a status and the next
# event the engine emits (the next call's screening, its own "running" before the tool starts, the
# approval request, the round's end), so each is held and stored in ONE transaction with that next
# event instead of its own: the §6 scenario's 16 transactions per run become 10. A worker killed
# while one is held loses only what the engine decides again from the stored round (R-RUN-2), and
# every status that precedes an effect ("running" before the tool runs) is still stored before
# ``emit`` returns. An "approved" with an error code (a call handed back for a sign-in) ends the
# segment, so it is never held.
HELD_STATUSES = ("proposed", "approved")
# A round whose response asks for no tool call is held the same way: what follows it is the run's end
# (or its failure, a stop, a shrink step: all durable, stored with it) or another round, whose
# ``RoundStarted`` (a live frame) stores it first, before the request leaves. A plain answer's run
# then ends in one transaction instead of two (docs/performance.md, session 11). A round WITH calls
# is stored on its own, before anything of its calls: a worker killed after it runs the calls without
# asking the model again (tests/durable/test_kill_matrix.py).
HOLD_ROUNDS_WITHOUT_CALLS = True


# Events whose batch moves the run (a pause, an end): a batch ending with one is never merged with the
# batches queued after it, since the status frames of the move follow the batch's last event.
MOVERS = (ev.ApprovalRequested, ev.RunFinished, ev.RunFailed)


@dataclass
class _Batch:
    """One emit's durable events (and the deltas they end), queued to be stored; ``done`` resolves
    once they are committed, or with what storing them raised."""

    items: list[store.DurableItem]
    live: list[LiveRow]
    done: asyncio.Future[None]


def held_until_next(event: ev.Event) -> bool:
    if isinstance(event, ev.RoundFinished):
        return HOLD_ROUNDS_WITHOUT_CALLS and not (event.response.choices and event.response.tool_calls)
    return isinstance(event, ev.ToolCallChanged) and event.status in HELD_STATUSES and not event.error_code


class RunRecorder:
    def __init__(
        self,
        runtime: WorkerRuntime,
        run_id: int,
        conversation_id: int,
        last_seq: int,
        coalesce_ms: int,
        lease: str = "",
    ) -> None:
        self.runtime = runtime
        self.run_id = run_id
        group = frames.group(conversation_id)
        # A run whose only stored frame is its lease's "running" one (seq 1) stored nothing before.
        self.book = RunBook(fresh=last_seq <= 1)
        self.writer = RunWriter(runtime, run_id, group, last_seq, lease)
        self.publisher = RunPublisher(run_id, group, runtime.publish_slots)
        self.coalescer = DeltaCoalescer(self._write_delta, coalesce_ms / 1000, self._load)
        self._stopped: asyncio.Event | None = None
        self.spans = StartSpans(run_id)  # the driver hands over the marks of this delivery's start
        self._held: list[store.DurableItem] = []  # durable events stored with the next one (below)
        # Durable batches are stored one at a time, in the order they were numbered. Parallel calls
        # emit from their own tasks: without it, a call's "running" and "succeeded" (its own batches)
        # could commit before the batch that held its "approved", whose upsert then set the call's row
        # back to "approved" (seen under load, tests/worker/test_step_transactions.py). The run's row
        # lock serialized the transactions already, only not in this order. Batches queued while one
        # is stored are stored together next (``_durable``).
        self._storing = asyncio.Lock()
        self._waiting: list[_Batch] = []

    async def __aenter__(self) -> RunRecorder:
        self._stopped = self.runtime.cancels.watch(self.run_id)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.runtime.cancels.unwatch(self.run_id)
        self._stopped = None

    @property
    def stopped(self) -> asyncio.Event:
        """Set when the user stops the run."""
        if self._stopped is None:
            raise RuntimeError("the recorder watches for a stop only inside `async with`")
        return self._stopped

    @property
    def seqs(self) -> Sequence:
        return self.writer.seqs

    @property
    def link_ids(self) -> list[int]:
        return self.book.link_ids

    @property
    def tool_infos(self) -> dict[str, Any]:
        return self.book.tool_infos

    @tool_infos.setter
    def tool_infos(self, infos: dict[str, Any]) -> None:
        self.book.tool_infos = infos

    async def emit(self, event: ev.Event) -> None:
        event = redact_event(event)  # one redaction for all that is stored, logged and published
        self.book.note(event)
        if isinstance(event, DELTAS):
            await self._store_held()
            await self.coalescer.add(event)
            return
        if isinstance(event, ev.DURABLE):
            held = held_until_next(event)
            live: list[LiveRow] = []
            if held or isinstance(event, ENDS):
                # The answer's last tokens go out now, on their own, as every token before them did:
                # a held round waits for the engine's next event, and an end for its slot (a burst of
                # ends, runtime.py); holding them measured worse (200 runs' token lag p99).
                await self.coalescer.flush()
            else:
                # A round with calls: its last deltas (tool arguments) are stored in its transaction
                # and published with it; a write of their own just before was a commit and a Redis
                # round trip per round (session 18).
                taken = await self.coalescer.take()
                live = [self.writer.number_live(Kind.DELTA, payload) for payload in taken]
            item = self.writer.prepare(event, self.book.extra_for(event))
            if isinstance(event, ev.ContextCompressed):
                self.book.note_compression(event.round_index, item.payload)
            if held:
                self._held.append(item)
                return
            # Stored in one transaction with the events held before it (one step, one commit).
            items, self._held = [*self._held, item], []
            await self._durable(items, live)
        else:
            await self.coalescer.flush()  # the deltas before this event go out before it
            await self._store_held()  # a live frame's number follows theirs: stored and sent first
            first_round = isinstance(event, ev.RoundStarted) and not self.spans.reported
            if first_round:
                self.spans.mark("prepared")
            await self.writer.live(event_type(event), event_payload(event))
            if first_round:
                # The request of the delivery's first round leaves next.
                self.spans.mark("request")
                self.spans.report()

    async def _durable(self, items: list[store.DurableItem], live: list[LiveRow] | None = None) -> None:
        """Store the batch (with the batches queued behind it by then) and publish it; returns once it
        is committed, raising what storing it raised."""
        batch = _Batch(items, live or [], asyncio.get_running_loop().create_future())
        # Queued with no await since the items were numbered, so batches queue in number order (FIFO).
        self._waiting.append(batch)
        # Not waiting for more: a call's "running" is stored before its tool starts, one at a time
        # (the kill matrix stops a worker between two calls' "running"). What queues while a batch
        # is stored (a parallel call's "running" behind another's result) goes with the next one.
        async with self._storing:
            if not batch.done.done():  # else the holder before stored it with its own
                # Shielded: a stop cancelling this task must not abandon the other tasks' batches.
                await asyncio.shield(self._store_batches(self._take_waiting()))
        batch.done.result()

    def _take_waiting(self) -> list[_Batch]:
        """The batches queued now, from the first, up to one that moves the run."""
        batches = [self._waiting.pop(0)]
        while self._waiting and not isinstance(batches[-1].items[-1].event, MOVERS):
            batches.append(self._waiting.pop(0))
        return batches

    async def _store_batches(self, batches: list[_Batch]) -> None:
        live = [row for batch in batches for row in batch.live]
        try:
            stored = await self.writer.store([item for batch in batches for item in batch.items], live)
            # Published only after their commit, in their order, in one round trip.
            published: list[tuple[int, str, dict[str, Any]]] = list(live)
            for event in stored:
                visible = shown(event.payload)
                log_event(self.run_id, event.seq, event.kind, visible)
                published.append((event.seq, event.kind, visible))
                # The status move the event made (waiting for approval, the end) follows it, in order.
                published += [(frame["seq"], frame["type"], frame["data"]) for frame in event.moved]
            await self.publisher.publish_all(sorted(published, key=lambda frame: frame[0]))
        except asyncio.CancelledError:
            for batch in batches:
                batch.done.cancel()
            raise
        except Exception as exc:  # noqa: BLE001 - handed to every emit whose events it held
            for batch in batches:
                batch.done.set_exception(exc)
            return
        for batch in batches:
            batch.done.set_result(None)

    async def _store_held(self) -> None:
        if self._held:
            items, self._held = self._held, []  # taken at once: a concurrent emit never stores them twice
            await self._durable(items)

    async def flush(self) -> None:
        """Everything emitted so far stored and sent (before the driver writes on its own)."""
        await self.coalescer.flush()
        await self._store_held()

    async def publish_frames(self, stored: list[frames.Frame]) -> None:
        await self.publisher.publish_stored(stored)

    async def _write_delta(self, payload: dict[str, Any]) -> None:
        await self.writer.live(Kind.DELTA, payload)

    def _load(self) -> float:
        # Under load (the loop runs late, the database answers slower) wider frames mean fewer
        # writes and messages per token, which is what lets one worker carry many runs.
        return max(2 * self.writer.latency, 4 * self.runtime.lag)

    async def ask_link(self, request: LinkRequest, timeout: float) -> LinkAnswer:
        """Show a tool server's link to the run's user and wait for their answer (links.py)."""
        return await links.ask(self, request, timeout)

    async def publish_link(self, link_id: int, state: str, request: LinkRequest) -> None:
        # The page renders the link from its row; the frame says which, for whom and in what state.
        await self.flush()
        link = {"id": link_id, "state": state, "call_id": request.call_id, "tool": request.tool}
        await self.writer.live(Kind.LINK, link)

    async def stop_reason(self) -> str | None:
        """A budget used up since the run started (issue 13): the loop stops before the next round."""
        from chatapp.services.quotas import stop_reason

        return await self.runtime.db(stop_reason, self.run_id)

    async def is_cancelled(self) -> bool:
        return self.run_id in self.runtime.cancels.cancelled
