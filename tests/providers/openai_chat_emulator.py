"""A strict OpenAI Chat Completions emulator for the reasoning-model rules (o1 / o3 / o4-mini).

What it rejects, with the documented 400 body (``{"error": {"message", "type", "param", "code"}}``):

* ``parallel_tool_calls`` on an o-series model, even ``false``: "Unsupported parameter:
  'parallel_tool_calls' is not supported with this model." (evalstate/fast-agent#279,
  run-llama/llama_index#20865);
* ``max_tokens`` on an o-series model (use ``max_completion_tokens``) and a non-default ``temperature``;
* an assistant message with ``tool_calls`` not followed by a tool message for each id.

Answers come from ``responder(body) -> Answer | Reply`` and stream as Chat Completions chunks.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from provider_fixture_server import FixtureServer, Recorded, Reply

O_SERIES = re.compile(r"^o\d")


@dataclass
class Answer:
    text: str = ""
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)


def openai_error(message: str, param: str | None, code: str | None) -> Reply:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return Reply.json(400, {"error": error})


def rejection(body: dict[str, Any]) -> Reply | None:
    if O_SERIES.match(body.get("model", "")):
        if "parallel_tool_calls" in body:
            return openai_error(
                "Unsupported parameter: 'parallel_tool_calls' is not supported with this model.",
                "parallel_tool_calls",
                "unsupported_parameter",
            )
        if "max_tokens" in body:
            return openai_error(
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                "max_tokens",
                "unsupported_parameter",
            )
        if body.get("temperature", 1) != 1:
            return openai_error(
                f"Unsupported value: 'temperature' does not support {body['temperature']} with this model. "
                "Only the default (1) value is supported.",
                "temperature",
                "unsupported_value",
            )
    messages = body.get("messages") or []
    for n, message in enumerate(messages):
        ids = [c["id"] for c in message.get("tool_calls") or []]
        answered = {m.get("tool_call_id") for m in messages[n + 1 : n + 1 + len(ids)] if m["role"] == "tool"}
        if any(i not in answered for i in ids):
            return openai_error(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to "
                "each 'tool_call_id'.",
                f"messages.[{n}].role",
                None,
            )
    return None


def stream_reply(answer: Answer, model: str) -> Reply:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {
            "id": "chatcmpl-emulated",
            "object": "chat.completion.chunk",
            "model": model,
            "choices": [choice],
        }

    chunks = [chunk({"role": "assistant", "content": answer.text or None})]
    for i, (call_id, name, arguments) in enumerate(answer.calls):
        function = {"name": name, "arguments": json.dumps(arguments)}
        chunks.append(
            chunk({"tool_calls": [{"index": i, "id": call_id, "type": "function", "function": function}]})
        )
    chunks.append(chunk({}, "tool_calls" if answer.calls else "stop"))
    usage = {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}
    chunks.append(
        {
            "id": "chatcmpl-emulated",
            "object": "chat.completion.chunk",
            "model": model,
            "choices": [],
            "usage": usage,
        }
    )
    pieces = [f"data: {json.dumps(c)}\n\n".encode() for c in chunks] + [b"data: [DONE]\n\n"]
    return Reply(pieces)


class StrictOpenAIChat(FixtureServer):
    def __init__(self, responder: Callable[[dict[str, Any]], Answer | Reply]) -> None:
        super().__init__()
        self.responder = responder
        self.bodies: list[dict[str, Any]] = []

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await self._read_request(reader)
            if request is None:
                return
            self.requests.append(request)
            await self._send(self._answer(request), writer)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    def _answer(self, request: Recorded) -> Reply:
        body = json.loads(request.body)
        self.bodies.append(body)
        refused = rejection(body)
        if refused is not None:
            return refused
        answer = self.responder(body)
        return answer if isinstance(answer, Reply) else stream_reply(answer, body.get("model", ""))
