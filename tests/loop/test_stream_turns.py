"""A stream that never waits for its socket still hands the event loop on (issue 15, bad input).

A provider's reader pauses by itself only when no data is buffered. A model flooding one-byte chunks
keeps the buffer full, so without turns its run would hold the loop, shared by every run of the
worker, for its whole answer (tests/integration/test_flooding_model.py measures the effect on
another user's stream through the real worker).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import pytest

from agent import events as ev
from agent.loop import LoopSettings
from agent.providers import types as pt
from tests.loop.loop_doubles import FuncToolbox, drive, reply

CHUNKS = 3_200


@dataclasses.dataclass
class Flooding:
    """Every chunk at once: the stream never suspends (its socket always holds data)."""

    name: str = "flood"
    model: str = "flood-model"

    async def stream(self, request: pt.ModelRequest) -> AsyncIterator[pt.ModelEvent]:
        for _ in range(CHUNKS):
            yield pt.TextDelta("x", 0)
        answer = reply("x" * CHUNKS)
        yield pt.Finish("stop", "stop", 0)
        yield pt.UsageReport(answer.usage)
        yield pt.ResponseDone(answer)


async def _turns_of_another_run(settings: LoopSettings) -> tuple[int, str]:
    """How often another task on the loop ran while the flooding run streamed, and its live text."""
    turns = 0
    done = asyncio.Event()

    async def other_run() -> None:
        nonlocal turns
        while not done.is_set():
            turns += 1
            await asyncio.sleep(0)

    other = asyncio.ensure_future(other_run())
    await asyncio.sleep(0)  # it has started
    started = turns
    _, _, sink = await drive(Flooding(), FuncToolbox({}), settings=settings)
    done.set()
    await other
    return turns - started, "".join(e.text for e in sink.events if isinstance(e, ev.TextDelta))


@pytest.mark.parametrize("every", [32, 8])
def test_a_flooding_stream_gives_the_loop_a_turn_every_few_events(every):
    turns, output = asyncio.run(_turns_of_another_run(LoopSettings(turn_every=every)))
    assert output == "x" * CHUNKS  # every delta forwarded, in order, turns or not
    assert turns >= CHUNKS // every, turns


def test_without_turns_another_run_waits_for_the_whole_flood():
    # What the turns prevent: the other run gets the loop only at the stream's few real awaits.
    turns, _ = asyncio.run(_turns_of_another_run(LoopSettings(turn_every=0)))
    assert turns < CHUNKS // 32, turns
