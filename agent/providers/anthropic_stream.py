"""Anthropic Messages stream accumulator, sans-I/O (providers.md §3, §7.3).

* blocks keyed by content-block ``index`` (text at 0 and a tool at 1 is normal); the tool index we
  emit counts tool_use blocks only;
* the ``input: {}`` placeholder of ``content_block_start`` is ignored; the ``partial_json``
  fragments are the arguments, and an empty concatenation means ``{}``;
* ``message_delta`` carries the stop reason and *cumulative* usage, merged over message_start's;
* ``ping`` is skipped, ``error`` raises the mapped error, EOF before ``message_stop`` is
  MalformedStream (the connection closes that way after a mid-stream error);
* JSON is parsed, never string-matched (real streams pad it with spaces);
* ``thinking`` blocks are assembled whole (text from ``thinking_delta``, ``signature`` from
  ``signature_delta``) and ``redacted_thinking`` blocks kept as they came: both are replay blocks
  the next request must carry back unchanged (agent/replay.py).
"""

from __future__ import annotations

import json
from typing import Any

from agent.providers.assemble import PendingCall, PendingChoice, finalize_choice, usage_from_anthropic
from agent.providers.error_map import map_error
from agent.providers.errors import MalformedStream, StreamEndedEarly
from agent.providers.types import (
    AssembledResponse,
    Finish,
    ModelEvent,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCallDelta,
    UsageReport,
)
from agent.replay import ReplayBlock


class AnthropicAccumulator:
    def __init__(self) -> None:
        self.done = False
        self.response_id: str | None = None
        self.model: str | None = None
        self.usage: dict[str, Any] = {}
        self.choice = PendingChoice(0)
        # content-block index -> ("text" | "thinking" | "tool", tool index or -1)
        self.blocks: dict[int, tuple[str, int]] = {}
        # content-block index -> the thinking block being assembled (also in choice.replay)
        self.thinking: dict[int, dict[str, Any]] = {}

    def feed(self, event: str, data: str) -> list[ModelEvent]:
        try:
            payload = json.loads(data)
        except json.JSONDecodeError as exc:
            raise MalformedStream(f"a stream event is not JSON: {data[:200]!r}") from exc
        if not isinstance(payload, dict):
            raise MalformedStream(f"a stream event is not a JSON object: {data[:200]!r}")
        return self.feed_event(payload.get("type") or event, payload)

    def feed_event(self, kind: str, payload: dict[str, Any]) -> list[ModelEvent]:
        if kind == "content_block_delta":
            return self._delta(payload.get("index", 0), payload.get("delta") or {})
        if kind == "content_block_start":
            return self._start(payload.get("index", 0), payload.get("content_block") or {})
        if kind == "content_block_stop":
            block = self.blocks.get(payload.get("index", 0))
            if block and block[0] == "tool":
                self.choice.calls[block[1]].complete = True
        elif kind == "message_start":
            message = payload.get("message") or {}
            self.response_id = message.get("id")
            self.model = message.get("model")
            self.usage.update(message.get("usage") or {})
        elif kind == "message_delta":
            delta = payload.get("delta") or {}
            if delta.get("stop_reason") is not None:
                self.choice.finish_raw = str(delta["stop_reason"])
            self.usage.update(payload.get("usage") or {})
        elif kind == "message_stop":
            self.done = True
        elif kind == "error":
            raise map_error(None, payload)
        return []  # ping and event types we do not use

    def _start(self, index: int, block: dict[str, Any]) -> list[ModelEvent]:
        kind = block.get("type")
        if kind == "tool_use":
            tool_index = len(self.choice.calls)
            self.choice.calls[tool_index] = PendingCall(id=block.get("id") or None, name=block.get("name"))
            self.blocks[index] = ("tool", tool_index)
            return [ToolCallDelta(0, tool_index, block.get("id") or None, block.get("name"), "")]
        if kind == "thinking":
            self.blocks[index] = ("thinking", -1)
            data = {**block, "thinking": block.get("thinking") or ""}
            data["signature"] = block.get("signature") or ""
            self.thinking[index] = data
            self.choice.replay.append(ReplayBlock("anthropic", "thinking", data))
            return self._add_reasoning(data["thinking"])
        if kind == "redacted_thinking":
            # Encrypted reasoning: nothing to show, everything to send back.
            self.choice.replay.append(ReplayBlock("anthropic", "redacted_thinking", dict(block)))
            return []
        if kind == "text":
            self.blocks[index] = ("text", -1)
            return self._add_text(block.get("text") or "")
        return []  # server tools: nothing the loop acts on

    def _delta(self, index: int, delta: dict[str, Any]) -> list[ModelEvent]:
        kind = delta.get("type")
        if kind == "text_delta":
            return self._add_text(delta.get("text") or "")
        if kind == "input_json_delta":
            block = self.blocks.get(index)
            fragment = delta.get("partial_json") or ""
            if block is None or block[0] != "tool" or not fragment:
                return []
            self.choice.calls[block[1]].parts.append(fragment)
            return [ToolCallDelta(0, block[1], None, None, fragment)]
        if kind == "thinking_delta":
            text = delta.get("thinking") or ""
            if index in self.thinking:
                self.thinking[index]["thinking"] += text
            return self._add_reasoning(text)
        if kind == "signature_delta" and index in self.thinking:
            self.thinking[index]["signature"] += delta.get("signature") or ""
        return []  # citations_delta

    def _add_text(self, text: str) -> list[ModelEvent]:
        if not text:
            return []
        self.choice.text.append(text)
        return [TextDelta(text)]

    def _add_reasoning(self, text: str) -> list[ModelEvent]:
        if not text:
            return []
        self.choice.reasoning.append(text)
        return [ReasoningDelta(text)]

    def finish(self) -> list[ModelEvent]:
        if not self.done:
            raise StreamEndedEarly("the stream ended before message_stop")
        choice = finalize_choice(self.choice, response_id=self.response_id)
        usage = usage_from_anthropic(self.usage)
        return [
            Finish(choice.finish_reason, choice.finish_reason_raw, 0),
            UsageReport(usage),
            ResponseDone(AssembledResponse((choice,), usage, self.response_id, self.model)),
        ]


def events_from_message(body: dict[str, Any]) -> list[ModelEvent]:
    """A non-streaming message, replayed as the events a stream would have carried."""
    accumulator = AnthropicAccumulator()
    message = {**body, "content": [], "stop_reason": None}
    events = accumulator.feed_event("message_start", {"message": message})
    for index, block in enumerate(body.get("content") or ()):
        if block.get("type") == "tool_use":
            events += accumulator.feed_event("content_block_start", {"index": index, "content_block": block})
            partial = json.dumps(block.get("input") or {}, ensure_ascii=False)
            delta = {"type": "input_json_delta", "partial_json": partial}
            events += accumulator.feed_event("content_block_delta", {"index": index, "delta": delta})
        else:
            events += accumulator.feed_event("content_block_start", {"index": index, "content_block": block})
        accumulator.feed_event("content_block_stop", {"index": index})
    stop = {"stop_reason": body.get("stop_reason")}
    accumulator.feed_event("message_delta", {"delta": stop, "usage": {}})
    accumulator.feed_event("message_stop", {})
    return events + accumulator.finish()
