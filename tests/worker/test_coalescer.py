"""Token deltas become DELTA frames: one per window, merged, in order, split when too long."""

from __future__ import annotations

import asyncio

import pytest

from agent import events as ev
from chatapp.worker import held_tail
from chatapp.worker.coalescer import MAX_WINDOW, DeltaCoalescer, merge_deltas


@pytest.fixture(autouse=True)
def no_known_secrets(monkeypatch):
    # What a frame holds back depends on the secrets' values (held_tail.py): none here but the patterns,
    # so the environment's own (SECRET_KEY, a CI's keys) hold nothing these tests do not expect.
    monkeypatch.setattr(held_tail, "known_secrets", list)


class Written:
    def __init__(self) -> None:
        self.payloads: list[dict] = []
        self.arrived = asyncio.Event()

    async def __call__(self, payload: dict) -> None:
        self.payloads.append(payload)
        self.arrived.set()


def text(i: int, s: str) -> ev.TextDelta:
    return ev.TextDelta(round_index=i, text=s)


async def test_deltas_inside_one_window_go_out_as_one_merged_frame():
    written = Written()
    coalescer = DeltaCoalescer(written, window=60.0, load=lambda: 0.0)
    await coalescer.add(text(2, "He "))  # the first delta goes out at once: no frame for a window
    await coalescer.add(text(2, "llo"))
    await coalescer.add(ev.ReasoningDelta(round_index=2, text="hm"))
    await coalescer.add(ev.ToolCallDelta(round_index=2, index=0, call_id="c1", name="f", arguments='{"a"'))
    await coalescer.add(ev.ToolCallDelta(round_index=2, index=0, call_id=None, name=None, arguments=": 1}"))
    assert [p["text"] for p in written.payloads] == ["He "]
    await coalescer.flush()
    assert written.payloads[1] == {
        "round_index": 2,
        "text": "llo",
        "reasoning": "hm",
        "tool_calls": [{"index": 0, "arguments": '{"a": 1}', "call_id": "c1", "name": "f"}],
    }
    await coalescer.flush()  # nothing pending: nothing written
    assert len(written.payloads) == 2


async def test_a_pending_delta_goes_out_when_its_window_ends_without_another_event():
    written = Written()
    coalescer = DeltaCoalescer(written, window=0.05, load=lambda: 0.0)
    await coalescer.add(text(0, "a "))
    written.arrived.clear()
    await coalescer.add(text(0, "b "))
    await asyncio.wait_for(written.arrived.wait(), timeout=5)  # the timer's flush, nobody else's
    assert [p["text"] for p in written.payloads] == ["a ", "b "]


@pytest.mark.parametrize(("load", "window"), [(0.0, 0.03), (0.2, 0.2), (9.0, MAX_WINDOW)])
def test_the_window_widens_with_the_load_up_to_a_bound(load, window):
    assert DeltaCoalescer(Written(), window=0.03, load=lambda: load).window() == window


async def test_a_long_text_is_split_in_order_and_a_second_flush_waits_for_the_first(settings):
    settings.FRAME_MAX_BYTES = 16 * 1024  # 2048 characters a frame
    gate, first_written = asyncio.Event(), asyncio.Event()
    payloads: list[dict] = []

    async def slow_write(payload: dict) -> None:
        payloads.append(payload)
        first_written.set()
        await gate.wait()

    coalescer = DeltaCoalescer(slow_write, window=60.0, load=lambda: 0.0)
    long = "x" * 2047 + " " + "y" * 2047 + " " + "z" * 9 + " "
    first = asyncio.create_task(coalescer.add(text(0, long)))
    await first_written.wait()  # the first flush is writing its first part
    await coalescer.add(text(0, "after"))  # inside the window: pending
    second = asyncio.create_task(coalescer.flush())
    gate.set()
    await asyncio.gather(first, second)
    assert [p["text"][:1] for p in payloads] == ["x", "y", "z", "a"]
    assert "".join(p["text"] for p in payloads) == long + "after"


async def test_a_key_split_by_a_window_goes_out_whole_with_the_next_frame():
    # A secret split by a frame boundary would match in neither frame (chatapp/worker/held_tail.py).
    written = Written()
    coalescer = DeltaCoalescer(written, window=0.0, load=lambda: 0.0)  # every add flushes
    for piece in ("key: sk-pr", "oj-ABCD", "EFGH and", " then", " Bearer ", "tok", "en."):
        await coalescer.add(text(3, piece))
    assert [p["text"] for p in written.payloads] == ["key: ", "sk-proj-ABCDEFGH and", " then", " "]
    await coalescer.flush()  # the recorder's flush (another event, the round's end) sends the rest
    assert written.payloads[-1] == {
        "round_index": 3,
        "text": "Bearer token.",
        "reasoning": "",
        "tool_calls": [],
    }
    await coalescer.flush()
    assert len(written.payloads) == 5


async def test_held_text_and_held_reasoning_wait_in_their_own_streams():
    written = Written()
    coalescer = DeltaCoalescer(written, window=0.0, load=lambda: 0.0)
    await coalescer.add(ev.ReasoningDelta(round_index=0, text="the key sk-a"))
    await coalescer.add(text(0, "Bear"))  # might be "Bearer <token>": no frame yet
    assert [(p["text"], p["reasoning"]) for p in written.payloads] == [("", "the key ")]
    await coalescer.add(text(0, "ly there"))
    assert [(p["text"], p["reasoning"]) for p in written.payloads][-1] == ("Bearly there", "")
    assert await coalescer.take() == [{"round_index": 0, "text": "", "reasoning": "sk-a", "tool_calls": []}]


async def test_a_key_in_a_calls_arguments_waits_per_call():
    written = Written()
    coalescer = DeltaCoalescer(written, window=0.0, load=lambda: 0.0)

    def fragment(index: int, piece: str, name: str | None = None) -> ev.ToolCallDelta:
        return ev.ToolCallDelta(
            round_index=1, index=index, call_id=name and f"c{index}", name=name, arguments=piece
        )

    await coalescer.add(fragment(0, '{"token": "sk-pro', name="login"))
    await coalescer.add(fragment(1, '{"path": "a.md"}', name="read"))
    await coalescer.add(fragment(0, 'j-Qm4TzW8rKx2VbN6pLs0Y"}'))
    calls = [c for p in written.payloads for c in p["tool_calls"]]
    # The first call's name shows at once; its argument waits from the possible key on, whole later.
    assert calls[0] == {"index": 0, "call_id": "c0", "name": "login", "arguments": '{"token": "'}
    assert {"index": 1, "call_id": "c1", "name": "read", "arguments": '{"path": "a.md"}'} in calls
    assert calls[-1] == {"index": 0, "arguments": 'sk-proj-Qm4TzW8rKx2VbN6pLs0Y"}'}
    shown = "".join(c["arguments"] for c in calls if c["index"] == 0)
    assert shown == '{"token": "sk-proj-Qm4TzW8rKx2VbN6pLs0Y"}'  # whole in one frame: redacted there


def test_merge_keeps_the_fragments_of_parallel_calls_apart():
    merged = merge_deltas(
        [
            ev.ToolCallDelta(round_index=1, index=0, call_id="a", name="f", arguments="{"),
            ev.ToolCallDelta(round_index=1, index=1, call_id="b", name="g", arguments="["),
            ev.ToolCallDelta(round_index=1, index=0, call_id=None, name=None, arguments="}"),
        ]
    )
    assert [(c["call_id"], c["arguments"]) for c in merged["tool_calls"]] == [("a", "{}"), ("b", "[")]
