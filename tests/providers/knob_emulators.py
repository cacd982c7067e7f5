"""Strict emulators for the request fields the provider knobs send, built from the providers' docs.

Each emulator answers a request over real HTTP (a ``FixtureServer`` whose reply is computed from the
request instead of queued) and refuses, with the documented status, error type and message, what
that provider refuses:

* Anthropic (platform.claude.com extended-thinking docs): ``thinking.budget_tokens`` at least 1,024
  and strictly below ``max_tokens``; ``thinking.type`` one of enabled / adaptive / disabled;
  ``output_config.effort`` one of low / medium / high / xhigh / max;
* DeepSeek (api-docs.deepseek.com/guides/thinking_mode): ``thinking.type`` enabled / disabled,
  ``reasoning_effort`` low / high / max (and the values it maps: minimal, medium, xhigh, ultra);
* DashScope (alibabacloud.com/help/en/model-studio/deep-thinking): ``enable_thinking`` a boolean,
  ``thinking_budget`` a positive integer, thinking only with ``stream: true``.

A request that passes gets a short valid stream in that provider's format.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from provider_fixture_server import FixtureServer, Recorded, Reply

Check = Callable[[dict[str, Any]], str | None]


def anthropic_error(message: str) -> Reply:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return Reply.json(400, body)


def openai_error(message: str, param: str | None = None) -> Reply:
    body = {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": None}}
    return Reply.json(400, body)


def check_anthropic(body: dict[str, Any]) -> str | None:
    thinking = body.get("thinking")
    if thinking is not None:
        kind = thinking.get("type")
        if kind not in ("enabled", "adaptive", "disabled"):
            return "thinking.type: Input should be 'enabled', 'adaptive' or 'disabled'"
        if kind == "enabled":
            budget = thinking.get("budget_tokens")
            if not isinstance(budget, int) or budget < 1024:
                return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
            if budget >= body["max_tokens"]:
                return "`max_tokens` must be greater than `thinking.budget_tokens`."
    effort = (body.get("output_config") or {}).get("effort")
    if effort is not None and effort not in ("low", "medium", "high", "xhigh", "max"):
        return "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'"
    return None


def check_deepseek(body: dict[str, Any]) -> str | None:
    thinking = body.get("thinking")
    if thinking is not None and thinking.get("type") not in ("enabled", "disabled"):
        return "thinking.type must be enabled or disabled"
    effort = body.get("reasoning_effort")
    if effort is not None and effort not in ("minimal", "low", "medium", "high", "xhigh", "max", "ultra"):
        return f"Invalid reasoning_effort: {effort}"
    return None


def check_dashscope(body: dict[str, Any]) -> str | None:
    if "enable_thinking" in body and not isinstance(body["enable_thinking"], bool):
        return "enable_thinking must be a boolean"
    budget = body.get("thinking_budget")
    if budget is not None and (not isinstance(budget, int) or budget <= 0):
        return "thinking_budget must be a positive integer"
    if body.get("enable_thinking") and not body.get("stream"):
        return "This model only support stream mode, please enable the stream parameter to access the model."
    return None


ANTHROPIC_OK = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",'
    b'"role":"assistant","model":"claude","content":[],"stop_reason":null,"usage":{"input_tokens":10,'
    b'"output_tokens":1}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"text_delta","text":"ok"}}\n\n'
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
    b'"usage":{"output_tokens":2}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)
CHAT_OK = (
    b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
    b'"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}\n\n'
    b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
    b'"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":1,'
    b'"total_tokens":11}}\n\n'
    b"data: [DONE]\n\n"
)


class KnobEmulator(FixtureServer):
    """Answers each request by checking its body: a documented 400, or a valid stream."""

    def __init__(self, flavour: str) -> None:
        super().__init__()
        self.flavour = flavour
        self.check: Check = {"anthropic": check_anthropic, "deepseek": check_deepseek}.get(
            flavour, check_dashscope
        )

    def reply_for(self, request: Recorded) -> Reply:
        body = request.json()
        problem = self.check(body)
        if self.flavour == "anthropic":
            return anthropic_error(problem) if problem else Reply.sse(ANTHROPIC_OK)
        return openai_error(problem) if problem else Reply.sse(CHAT_OK)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await self._read_request(reader)
            if request is None:
                return
            self.requests.append(request)
            await self._send(self.reply_for(request), writer)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


def sent(server: FixtureServer, index: int = -1) -> dict[str, Any]:
    return json.loads(server.requests[index].body)
