"""A run's token deltas, coalesced into DELTA frames: one frame per window, never one per token.

The window is ``STREAM_COALESCE_MS`` at rest and widens with the worker's load (its loop running late,
its writes answering slowly), up to ``MAX_WINDOW``: fewer, larger frames are what lets one worker
carry many runs. A flush may split its text across several frames, each numbered as it is written,
so flushes are serialized: the timer's flush must not number a frame between another flush's.

A frame's text stops before an end that could be the start of a secret (``held_tail``): that end
waits for the next frame, where a secret split by the frame boundary is whole again and is redacted
with the frame. The recorder's flushes (before another event, at the round's end) send everything.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from agent import events as ev
from chatapp.frame_limits import fold_stored_delta, split_text
from chatapp.worker.held_tail import split_tail

DELTAS = (ev.TextDelta, ev.ReasoningDelta, ev.ToolCallDelta)
# 0.2 s: at 0.5 s the widened window was most of a token's wait under load (200 runs x 20 tokens/s:
# token lag p99 315 ms at 0.5, 240 at 0.2, 216 at 0.1), for no measured saving of CPU at 200 or 1,000
# runs (docs/performance.md, session 14).
MAX_WINDOW = 0.2


class DeltaCoalescer:
    def __init__(
        self, write: Callable[[dict[str, Any]], Awaitable[None]], window: float, load: Callable[[], float]
    ) -> None:
        self._write = write  # stores and publishes one DELTA payload, in order
        self.floor = window
        self._load = load  # seconds of lag the worker shows now (a wider window when it is busy)
        self._pending: list[ev.Event] = []
        self._last_flush = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._flushing: asyncio.Task[None] | None = None  # the timer's flush, kept from the collector
        self._lock = asyncio.Lock()
        self._held = {"text": "", "reasoning": ""}  # each stream's held end, sent with its next frame
        self._held_args: dict[int, str] = {}  # the same for each tool call's argument fragments, by index
        self._round = 0  # the round of the held ends (a round ends with a whole flush)

    def window(self) -> float:
        return max(self.floor, min(MAX_WINDOW, self._load()))

    async def add(self, delta: ev.Event) -> None:
        """Flushes at once when the last flush is a window old; otherwise a timer flushes later."""
        self._pending.append(delta)
        window = self.window()
        if time.monotonic() - self._last_flush >= window:
            await self._flush(whole=False)
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(window, self._flush_soon)

    def _flush_soon(self) -> None:
        self._timer = None
        self._flushing = asyncio.ensure_future(self._flush(whole=False))

    async def flush(self) -> None:
        """Write what is pending, the held ends included; returns once it (and any flush in flight)
        is written."""
        await self._flush(whole=True)

    async def _flush(self, whole: bool) -> None:
        async with self._lock:
            for payload in self._take_pending(whole):
                await self._write(payload)

    async def take(self) -> list[dict[str, Any]]:
        """Everything pending, as the DELTA payloads ``flush`` would write, for the caller to store
        itself (with the durable event that ends them: one transaction instead of two)."""
        async with self._lock:  # after any flush in flight: its frames are numbered before these
            return self._take_pending(whole=True)

    def _take_pending(self, whole: bool) -> list[dict[str, Any]]:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        held = any(self._held.values()) or any(self._held_args.values())
        if not self._pending and not (whole and held):
            return []
        pending, self._pending = self._pending, []
        self._last_flush = time.monotonic()
        payload = merge_deltas(pending)
        if pending:
            self._round = payload["round_index"]
        payload["round_index"] = self._round
        for key, held_text in self._held.items():
            payload[key], self._held[key] = self._shown(held_text + payload[key], whole)
        payload["tool_calls"] = self._calls_shown(payload["tool_calls"], whole)
        if not (payload["text"] or payload["reasoning"] or payload["tool_calls"]):
            return []  # only what might start a secret so far
        return [fold_stored_delta(part) for part in split_text(payload)]

    @staticmethod
    def _shown(text: str, whole: bool) -> tuple[str, str]:
        return (text, "") if whole else split_tail(text)

    def _calls_shown(self, calls: list[dict[str, Any]], whole: bool) -> list[dict[str, Any]]:
        """The calls' argument fragments with their held ends, each call's arguments on their own."""
        by_index = {call["index"]: call for call in calls}
        for index in sorted(self._held_args):
            by_index.setdefault(index, {"index": index, "arguments": ""})
        shown = []
        for index, call in by_index.items():
            call["arguments"], rest = self._shown(self._held_args.pop(index, "") + call["arguments"], whole)
            if rest:
                self._held_args[index] = rest
            if call["arguments"] or call.get("call_id") or call.get("name"):
                shown.append(call)
        return shown


def merge_deltas(events: list[ev.Event]) -> dict[str, Any]:
    """Fold a batch of deltas into one frame payload, keeping tool-argument fragments per call."""
    text: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    round_index = 0
    for event in events:
        round_index = getattr(event, "round_index", round_index)  # only deltas are batched
        if isinstance(event, ev.TextDelta):
            text.append(event.text)
        elif isinstance(event, ev.ReasoningDelta):
            reasoning.append(event.text)
        elif isinstance(event, ev.ToolCallDelta):
            call = calls.setdefault(event.index, {"index": event.index, "arguments": ""})
            if event.call_id:
                call["call_id"] = event.call_id
            if event.name:
                call["name"] = event.name
            call["arguments"] += event.arguments
    return {
        "round_index": round_index,
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "tool_calls": list(calls.values()),
    }
