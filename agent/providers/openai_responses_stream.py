"""OpenAI Responses stream accumulator, sans-I/O (providers.md §2, §7.4).

* function calls keyed by ``item_id`` (falling back to ``output_index``): ``output_index`` is a
  position in ``output[]``, not a tool index (a reasoning item pushes the call to index 1);
* ``call_id`` and ``name`` come from ``response.output_item.added``; the arguments are the deltas,
  replaced by the full string of ``...arguments.done`` / ``output_item.done`` when those come;
* there is no finish_reason: it is derived from ``status`` / ``incomplete_details`` (finish.py);
* terminal events are ``response.completed`` / ``response.incomplete``; ``response.failed`` and the
  ``error`` event raise the mapped error; EOF before a terminal event is MalformedStream;
* a ``reasoning`` item is taken whole from ``response.output_item.done`` (id, summary,
  ``encrypted_content``) and kept as a replay block for the next request (agent/replay.py).
"""

from __future__ import annotations

import json
from typing import Any

from agent.providers import finish
from agent.providers.assemble import PendingCall, PendingChoice, finalize_choice, usage_from_responses
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
    Usage,
    UsageReport,
)
from agent.replay import ReplayBlock

_REASONING_DELTAS = frozenset({"response.reasoning_summary_text.delta", "response.reasoning_text.delta"})


class ResponsesAccumulator:
    def __init__(self) -> None:
        self.done = False
        self.response_id: str | None = None
        self.model: str | None = None
        self.status: str | None = None
        self.incomplete_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.choice = PendingChoice(0)
        self._by_key: dict[str, int] = {}  # item id or "#<output_index>" -> tool index

    def feed(self, event: str, data: str) -> list[ModelEvent]:
        try:
            payload = json.loads(data)
        except json.JSONDecodeError as exc:
            raise MalformedStream(f"a stream event is not JSON: {data[:200]!r}") from exc
        if not isinstance(payload, dict):
            raise MalformedStream(f"a stream event is not a JSON object: {data[:200]!r}")
        return self.feed_event(payload.get("type") or event, payload)

    def feed_event(self, kind: str, payload: dict[str, Any]) -> list[ModelEvent]:
        if kind == "response.output_text.delta":
            return self._text(payload.get("delta") or "")
        if kind == "response.function_call_arguments.delta":
            return self._arguments(payload, payload.get("delta") or "")
        if kind in _REASONING_DELTAS:
            text = payload.get("delta") or ""
            self.choice.reasoning.append(text)
            return [ReasoningDelta(text)] if text else []
        if kind == "response.refusal.delta":
            self.choice.refusal.append(payload.get("delta") or "")
        elif kind == "response.output_item.added":
            return self._item_added(payload)
        elif kind == "response.function_call_arguments.done":
            self._complete(payload, payload.get("arguments"))
        elif kind == "response.output_item.done":
            item = payload.get("item") or {}
            if item.get("type") == "function_call":
                self._complete({"item_id": item.get("id"), **payload}, item.get("arguments"))
            elif item.get("type") == "reasoning":
                self.choice.replay.append(ReplayBlock("openai_responses", "reasoning", dict(item)))
        elif kind in ("response.created", "response.in_progress"):
            self._response(payload.get("response") or {})
        elif kind in ("response.completed", "response.incomplete"):
            self._response(payload.get("response") or {})
            self.done = True
        elif kind == "response.failed":
            response = payload.get("response") or {}
            raise map_error(None, {"error": response.get("error") or {"message": "the response failed"}})
        elif kind == "error":
            raise map_error(None, payload)
        return []

    def _response(self, response: dict[str, Any]) -> None:
        self.response_id = response.get("id") or self.response_id
        self.model = response.get("model") or self.model
        self.status = response.get("status") or self.status
        details = response.get("incomplete_details") or {}
        self.incomplete_reason = details.get("reason") or self.incomplete_reason
        if isinstance(response.get("usage"), dict):
            self.usage = response["usage"]

    def _text(self, text: str) -> list[ModelEvent]:
        if not text:
            return []
        self.choice.text.append(text)
        return [TextDelta(text)]

    def _item_added(self, payload: dict[str, Any]) -> list[ModelEvent]:
        item = payload.get("item") or {}
        if item.get("type") != "function_call":
            return []
        index = len(self.choice.calls)
        call = self.choice.calls[index] = PendingCall(id=item.get("call_id") or None, name=item.get("name"))
        if item.get("id"):
            self._by_key[item["id"]] = index
        self._by_key[f"#{payload.get('output_index')}"] = index
        if item.get("arguments"):
            call.parts.append(item["arguments"])
        return [ToolCallDelta(0, index, call.id, call.name, item.get("arguments") or "")]

    def _find(self, payload: dict[str, Any]) -> int | None:
        found = self._by_key.get(payload.get("item_id") or "")
        return found if found is not None else self._by_key.get(f"#{payload.get('output_index')}")

    def _arguments(self, payload: dict[str, Any], fragment: str) -> list[ModelEvent]:
        index = self._find(payload)
        if index is None or not fragment:
            return []
        self.choice.calls[index].parts.append(fragment)
        return [ToolCallDelta(0, index, None, None, fragment)]

    def _complete(self, payload: dict[str, Any], arguments: Any) -> None:
        index = self._find(payload)
        if index is None:
            return
        call = self.choice.calls[index]
        if isinstance(arguments, str):
            call.final_arguments = arguments
        status = (payload.get("item") or {}).get("status")
        call.complete = status != "incomplete"

    def finish(self) -> list[ModelEvent]:
        if not self.done:
            raise StreamEndedEarly("the stream ended before response.completed or response.incomplete")
        raw = finish.responses_raw(self.status, self.incomplete_reason)
        reason = finish.normalize_responses(
            self.status, self.incomplete_reason, has_tool_calls=bool(self.choice.calls)
        )
        choice = finalize_choice(
            self.choice, response_id=self.response_id, finish_reason=reason, finish_raw=raw
        )
        usage = usage_from_responses(self.usage) if self.usage else Usage()
        events: list[ModelEvent] = [Finish(choice.finish_reason, choice.finish_reason_raw, 0)]
        if self.usage:
            events.append(UsageReport(usage))
        events.append(ResponseDone(AssembledResponse((choice,), usage, self.response_id, self.model)))
        return events


def _item_events(accumulator: ResponsesAccumulator, index: int, item: dict[str, Any]) -> list[ModelEvent]:
    events = accumulator.feed_event(
        "response.output_item.added", {"output_index": index, "item": {**item, "arguments": ""}}
    )
    if item.get("type") == "function_call":
        delta = {"item_id": item.get("id"), "output_index": index, "delta": item.get("arguments") or ""}
        events += accumulator.feed_event("response.function_call_arguments.delta", delta)
    for part in item.get("content") or () if item.get("type") == "message" else ():
        if part.get("type") == "output_text":
            events += accumulator.feed_event("response.output_text.delta", {"delta": part.get("text") or ""})
        elif part.get("type") == "refusal":
            accumulator.feed_event("response.refusal.delta", {"delta": part.get("refusal") or ""})
    for part in item.get("summary") or () if item.get("type") == "reasoning" else ():
        events += accumulator.feed_event(
            "response.reasoning_summary_text.delta", {"delta": part.get("text") or ""}
        )
    accumulator.feed_event("response.output_item.done", {"output_index": index, "item": item})
    return events


def events_from_response(body: dict[str, Any]) -> list[ModelEvent]:
    """A non-streaming response object, replayed as the events a stream would have carried."""
    accumulator = ResponsesAccumulator()
    accumulator.feed_event("response.created", {"response": body})
    events: list[ModelEvent] = []
    for index, item in enumerate(body.get("output") or ()):
        events += _item_events(accumulator, index, item)
    status = body.get("status")
    terminal = {"failed": "response.failed", "incomplete": "response.incomplete"}.get(
        status or "", "response.completed"
    )
    accumulator.feed_event(terminal, {"response": body})
    return events + accumulator.finish()
