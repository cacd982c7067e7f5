"""Chat Completions stream accumulator, sans-I/O (providers.md §1.3, §1.5, §7.2).

Fed the ``data:`` payload of each SSE event (``[DONE]`` included), it returns the deltas to emit
and, at the end, the assembled response. Quirks handled, each seen in a real recording:

* tool-call deltas keyed by ``(choice.index, tool_call.index)``; interleaving is fine;
* ``id``/``name`` taken from the first non-empty value (DashScope repeats ``"id": ""``);
* ``arguments`` missing means ``""`` (vLLM), an object is serialised (some local servers);
* ``usage`` read from any chunk, the finish chunk included (DeepSeek), ``choices: []`` tolerated;
* a missing ``finish_reason`` key is null (DashScope, xAI);
* ``reasoning_content`` (DeepSeek, llama.cpp, vLLM) and ``reasoning`` (Ollama);
* ``reasoning_details`` (OpenRouter) assembled per entry and kept as replay blocks, and a tool
  call's ``extra_content`` (Gemini's thought signature) kept whole for the echo (agent/replay.py);
* ``{"error": ...}`` in the stream raises the mapped error (OpenAI SDK, vLLM);
* no ``[DONE]`` is fine once every choice has finished; ending before any finish is not.
"""

from __future__ import annotations

import json
from typing import Any

from agent.providers.assemble import PendingCall, PendingChoice, finalize_choice, usage_from_openai
from agent.providers.error_map import extract_error, map_error
from agent.providers.errors import MalformedStream, StreamEndedEarly
from agent.providers.types import (
    AssembledResponse,
    Finish,
    ModelEvent,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageReport,
)
from agent.replay import ReplayBlock


def _text_of(content: Any) -> str:
    if type(content) is str:
        return content
    if isinstance(content, list):  # content parts, as some compatible servers send them
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class ChatAccumulator:
    def __init__(self) -> None:
        self.done = False
        self.response_id: str | None = None
        self.model: str | None = None
        self.usage: dict[str, Any] | None = None
        self.choices: dict[int, PendingChoice] = {}
        # choice index -> reasoning_details entries being assembled, by their ``index`` (or order)
        self.details: dict[int, dict[Any, dict[str, Any]]] = {}

    def feed(self, event: str, data: str) -> list[ModelEvent]:
        if data.startswith("[DONE]"):
            self.done = True
            return []
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError as exc:
            raise MalformedStream(f"a stream event is not JSON: {data[:200]!r}") from exc
        if not isinstance(chunk, dict):
            raise MalformedStream(f"a stream event is not a JSON object: {data[:200]!r}")
        return self.feed_chunk(chunk)

    def feed_chunk(self, chunk: dict[str, Any]) -> list[ModelEvent]:
        # Cheap membership test first: this runs for every chunk of every stream.
        if ("error" in chunk or chunk.get("object") == "error") and extract_error(chunk) is not None:
            raise map_error(None, chunk)
        if self.response_id is None and chunk.get("id"):
            self.response_id = str(chunk["id"])
        if not self.model and chunk.get("model"):
            self.model = str(chunk["model"])
        usage = chunk.get("usage")
        if usage and type(usage) is dict:
            # Later usage replaces earlier: vLLM's continuous usage stats are cumulative.
            self.usage = usage
        events: list[ModelEvent] = []
        for choice in chunk.get("choices") or ():
            self._feed_choice(choice, events)
        return events

    def _feed_choice(self, choice: dict[str, Any], events: list[ModelEvent]) -> None:
        index = choice.get("index") or 0
        pending = self.choices.get(index)
        if pending is None:
            pending = self.choices[index] = PendingChoice(index)
        delta = choice.get("delta") or choice.get("message") or {}
        # One pass over the (few) keys present rather than a lookup per field we know of.
        for key, value in delta.items():
            if not value:
                continue
            if key == "content":
                text = _text_of(value)
                if text:
                    pending.text.append(text)
                    events.append(TextDelta(text, index))
            elif type(value) is str and (
                key == "reasoning_content" or (key == "reasoning" and not delta.get("reasoning_content"))
            ):
                # Servers sending both carry the same text twice; reasoning_content wins.
                pending.reasoning.append(value)
                events.append(ReasoningDelta(value, index))
            elif key == "refusal" and type(value) is str:
                pending.refusal.append(value)
            elif key == "tool_calls":
                for call in value:
                    self._feed_call(pending, call, events)
            elif key == "reasoning_details" and isinstance(value, list):
                self._feed_details(index, value)
            elif key == "function_call" and not delta.get("tool_calls") and type(value) is dict:
                # The deprecated single function_call.
                self._feed_call(pending, {"index": 0, "function": value}, events)
        raw = choice.get("finish_reason")
        if raw is not None:
            pending.finish_raw = str(raw)  # Poolside sends integers

    def _feed_call(self, pending: PendingChoice, call: dict[str, Any], events: list[ModelEvent]) -> None:
        index = call.get("index")
        if not isinstance(index, int):
            index = self._guess_index(pending, call.get("id"))
        target = pending.calls.get(index)
        if target is None:
            target = pending.calls[index] = PendingCall()
        function = call.get("function") or {}
        new_id = new_name = None
        if not target.id and call.get("id"):
            target.id = new_id = str(call["id"])
        if not target.name and function.get("name"):
            target.name = new_name = str(function["name"])
        if isinstance(call.get("extra_content"), dict) and not target.provider_extra:
            target.provider_extra = {"extra_content": call["extra_content"]}
        fragment = function.get("arguments")
        if fragment is None:
            fragment = ""
        elif not isinstance(fragment, str):
            fragment = json.dumps(fragment, ensure_ascii=False)
        if fragment:
            target.parts.append(fragment)
        if new_id or new_name or fragment:
            events.append(ToolCallDelta(pending.index, index, new_id, new_name, fragment))

    def _feed_details(self, choice: int, entries: list[Any]) -> None:
        """Streamed entries are fragments of one entry per ``index``: strings concatenate, other
        values are set once they are not null (the signature comes last)."""
        assembled = self.details.setdefault(choice, {})
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            # An entry without ``index`` is whole: it gets a key of its own.
            key = entry["index"] if "index" in entry else f"#{len(assembled)}"
            target = assembled.setdefault(key, {})
            for name, value in entry.items():
                appendable = name not in ("type", "format", "id", "index")
                if appendable and isinstance(value, str) and isinstance(target.get(name), str):
                    target[name] += value
                elif value is not None or name not in target:
                    target[name] = value

    @staticmethod
    def _guess_index(pending: PendingChoice, call_id: Any) -> int:
        # The spec requires ``index``; for servers that omit it, a new id starts a new call.
        if not pending.calls:
            return 0
        last = max(pending.calls)
        if call_id and pending.calls[last].id and pending.calls[last].id != call_id:
            return last + 1
        return last

    def finish(self) -> list[ModelEvent]:
        if not self.choices:
            raise StreamEndedEarly("the stream ended without any choice")
        if not self.done and all(c.finish_raw is None for c in self.choices.values()):
            raise StreamEndedEarly("the stream ended before a finish_reason or [DONE]")
        for index, entries in self.details.items():
            if index in self.choices:
                self.choices[index].replay.extend(
                    ReplayBlock("openai_chat", "reasoning_details", entry) for entry in entries.values()
                )
        choices = tuple(
            finalize_choice(self.choices[i], response_id=self.response_id) for i in sorted(self.choices)
        )
        usage = usage_from_openai(self.usage) if self.usage else Usage()
        events: list[ModelEvent] = [Finish(c.finish_reason, c.finish_reason_raw, c.index) for c in choices]
        if self.usage:
            events.append(UsageReport(usage))
        events.append(ResponseDone(AssembledResponse(choices, usage, self.response_id, self.model)))
        return events


def events_from_completion(body: dict[str, Any]) -> list[ModelEvent]:
    """A non-streaming body, replayed through the same accumulator so both modes agree."""
    accumulator = ChatAccumulator()
    choices = []
    for choice in body.get("choices") or ():
        message = dict(choice.get("message") or {})
        calls = message.get("tool_calls") or []
        message["tool_calls"] = [{**call, "index": i} for i, call in enumerate(calls)]
        choices.append(
            {"index": choice.get("index", 0), "delta": message, "finish_reason": choice.get("finish_reason")}
        )
    events = accumulator.feed_chunk({**body, "choices": choices})
    accumulator.done = True
    return events + accumulator.finish()
