"""Starts take turns only while the worker's loop runs late (chatapp/worker/start_pacer.py), and run
ends are stored a few at a time (``WorkerRuntime.end_slots``): both leave the loop its share of the
GIL when hundreds of runs start or end together (docs/performance.md, session 17)."""

from __future__ import annotations

import asyncio

from agent import events as ev
from agent.providers.types import Usage
from chatapp.worker import store
from chatapp.worker.run_writer import RunWriter
from chatapp.worker.start_pacer import StartPacer


def _holds_the_turn(pacer: StartPacer) -> bool:
    """Whether a start inside its turn keeps every other start out until it leaves."""
    with pacer.turn():
        return pacer._turn.locked()


def test_a_late_loop_makes_starts_take_turns():
    pacer = StartPacer(lambda: 0.050, limit=0.010)
    assert _holds_the_turn(pacer) is True
    assert not pacer._turn.locked()  # and gives it back


def test_a_loop_on_time_lets_starts_run_side_by_side():
    assert _holds_the_turn(StartPacer(lambda: 0.002, limit=0.010)) is False


def test_a_limit_of_zero_never_paces():
    assert _holds_the_turn(StartPacer(lambda: 5.0, limit=0)) is False


def test_the_turn_is_given_back_when_a_start_fails():
    pacer = StartPacer(lambda: 0.050, limit=0.010)
    try:
        with pacer.turn():
            raise RuntimeError("the lease could not be taken")
    except RuntimeError:
        pass
    assert not pacer._turn.locked()


class _CountingRuntime:
    """Counts how many ``persist_durable_batch`` calls are in flight at once."""

    def __init__(self, slots: int) -> None:
        self.end_slots = asyncio.Semaphore(slots)
        self.now = self.most = 0
        self.gate = asyncio.Event()

    async def db(self, fn, *args):
        self.now += 1
        self.most = max(self.most, self.now)
        await self.gate.wait()
        self.now -= 1
        return []


def _item(seq: int, event: ev.Event) -> store.DurableItem:
    return store.DurableItem(seq, "x", {}, event, {})


async def _store_concurrently(runtime: _CountingRuntime, events: list[ev.Event]) -> int:
    writers = [RunWriter(runtime, run_id, "g", 1, "") for run_id in range(len(events))]  # type: ignore[arg-type]
    tasks = [asyncio.create_task(w.store([_item(2, e)])) for w, e in zip(writers, events, strict=True)]
    for _ in range(20):  # let every task reach the database or its slot
        await asyncio.sleep(0)
    in_flight = runtime.now
    runtime.gate.set()
    await asyncio.gather(*tasks)
    return in_flight


def test_run_ends_are_stored_a_few_at_a_time():
    ends: list[ev.Event] = [ev.RunFinished(text="done", usage=Usage()) for _ in range(5)]
    ends.append(ev.RunFailed(error_class="X", message="failed"))
    runtime = _CountingRuntime(slots=2)
    assert asyncio.run(_store_concurrently(runtime, ends)) == 2
    assert runtime.most == 2


def test_other_durable_events_are_not_held_by_the_end_slots():
    rounds: list[ev.Event] = [ev.ContextCompressed(round_index=0, step="trim") for _ in range(5)]
    runtime = _CountingRuntime(slots=1)
    assert asyncio.run(_store_concurrently(runtime, rounds)) == 5
