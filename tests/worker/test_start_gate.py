"""A worker starts only a few runs at once (issue 15 target 4: a burst of sends must not stall the
streams already running); a run leaves the gate at its engine's first event, or when its delivery
ends before one."""

from __future__ import annotations

import asyncio

from chatapp.worker.start_gate import StartGate
from chatapp.worker.start_spans import StartSpans


async def _hold(gate: StartGate, spans: StartSpans, inside: asyncio.Event, done: asyncio.Event) -> None:
    async with gate.start(spans):
        inside.set()
        await done.wait()


async def test_a_third_run_starts_when_one_of_two_has_emitted_its_first_event():
    gate = StartGate(2)
    spans = [StartSpans(run) for run in (1, 2, 3)]
    inside = [asyncio.Event() for _ in spans]
    done = [asyncio.Event() for _ in spans]
    tasks = [asyncio.create_task(_hold(gate, s, i, d)) for s, i, d in zip(spans, inside, done, strict=True)]
    await asyncio.wait_for(asyncio.gather(inside[0].wait(), inside[1].wait()), 5)
    for _ in range(20):
        await asyncio.sleep(0)  # every ready task has had its turn
    assert not inside[2].is_set() and gate.starting == 2
    spans[0].started()  # run 1's engine emitted: it streams on, still inside its context
    await asyncio.wait_for(inside[2].wait(), 5)
    assert not tasks[0].done() and gate.starting == 2
    assert "started" in spans[2].marks and spans[2].on_started is not None
    spans[0].started()  # a second event changes nothing
    for event in done:
        event.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert gate.starting == 0


async def test_a_delivery_that_ends_before_any_event_leaves_the_gate():
    gate = StartGate(1)
    first = StartSpans(1)
    try:
        async with gate.start(first):
            raise RuntimeError("the context could not be read")
    except RuntimeError:
        pass
    assert gate.starting == 0 and first.on_started is None
    async with asyncio.timeout(5):
        async with gate.start(StartSpans(2)):
            assert gate.starting == 1
