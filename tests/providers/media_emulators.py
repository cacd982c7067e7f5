"""Strict emulators of how each API takes a tool result that holds an image, built from the docs.

Round 1 (no tool result yet) answers with one call of ``TOOL``; round 2 checks the tool result the
way the provider documents it and answers with text, or refuses with the documented error shape:

* Anthropic Messages: ``tool_result.content`` is a string or a list of content blocks; an image block
  is ``{"type": "image", "source": {"type": "base64", "media_type", "data"}}`` with media_type one of
  image/jpeg, image/png, image/gif, image/webp and ``data`` base64.
* OpenAI Responses: ``function_call_output.output`` is a string or a list of ``input_text`` /
  ``input_image`` / ``input_file`` parts; ``input_image.image_url`` a URL or a base64 data URL.
* OpenAI Chat Completions: a ``tool`` message's content is a string or a list of ``text`` parts only
  (openai-python ``chat_completion_tool_message_param.py``): anything else is a 400.

Each records what round 2 received so a test can look at the image as the model would get it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from typing import Any

from knob_emulators import anthropic_error, openai_error
from provider_fixture_server import FixtureServer, Recorded, Reply

TOOL = "hosted__screenshot"
ANTHROPIC_IMAGE_TYPES = {"image/jpeg", "image/png", "image/gif", "image/webp"}


def _sse(*events: dict[str, Any], named: bool = True) -> bytes:
    if named:
        return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"


def _b64(data: Any) -> bool:
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError, TypeError):
        return False
    return True


# --- Anthropic ---------------------------------------------------------------------------------
def anthropic_stream(call: bool, tool: str = TOOL) -> bytes:
    start = {
        "type": "message_start",
        "message": {"id": "msg_1", "model": "claude", "usage": {"input_tokens": 9}},
    }
    if call:
        block = {"type": "tool_use", "id": "toolu_1", "name": tool, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": "{}"}
        stop = "tool_use"
    else:
        block, delta, stop = (
            {"type": "text", "text": ""},
            {"type": "text_delta", "text": "I see it."},
            "end_turn",
        )
    return _sse(
        start,
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    )


def check_anthropic_result(result: dict[str, Any]) -> str | None:
    content = result.get("content")
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return "messages.1.content.0.tool_result.content: Input should be a valid string or list"
    for n, block in enumerate(content):
        kind = block.get("type")
        where = f"messages.1.content.0.tool_result.content.{n}"
        if kind == "text":
            continue
        if kind != "image":
            return f"{where}: Input tag '{kind}' does not match any of the expected tags: 'text', 'image'"
        source = block.get("source") or {}
        if source.get("type") != "base64" or source.get("media_type") not in ANTHROPIC_IMAGE_TYPES:
            return f"{where}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
        if not _b64(source.get("data")):
            return f"{where}.image.source.base64.data: The image data is not valid base64"
    return None


# --- OpenAI Responses ----------------------------------------------------------------------------
def responses_stream(call: bool, tool: str = TOOL) -> bytes:
    response = {"id": "resp_1", "model": "gpt-x", "status": "in_progress", "output": []}
    usage = {"input_tokens": 9, "output_tokens": 3, "total_tokens": 12}
    if call:
        item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": tool, "arguments": ""}
        done = {**item, "arguments": "{}", "status": "completed"}
        middle = [
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {
                "type": "response.function_call_arguments.delta",
                "item_id": "fc_1",
                "output_index": 0,
                "delta": "{}",
            },
            {"type": "response.output_item.done", "output_index": 0, "item": done},
        ]
        output = [done]
    else:
        text = {"type": "output_text", "text": "I see it.", "annotations": []}
        message = {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [text],
        }
        middle = [
            {"type": "response.output_item.added", "output_index": 0, "item": {**message, "content": []}},
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": "I see it.",
            },
            {"type": "response.output_item.done", "output_index": 0, "item": message},
        ]
        output = [message]
    completed = {**response, "status": "completed", "output": output, "usage": usage}
    return _sse(
        {"type": "response.created", "response": response},
        *middle,
        {"type": "response.completed", "response": completed},
    )


def check_responses_output(item: dict[str, Any]) -> str | None:
    output = item.get("output")
    if isinstance(output, str):
        return None
    if not isinstance(output, list):
        return "Invalid type for 'input[2].output': expected one of a string or an array of objects."
    for n, part in enumerate(output):
        kind = part.get("type")
        if kind == "input_text" and isinstance(part.get("text"), str):
            continue
        if kind == "input_image":
            url = part.get("image_url") or ""
            head, _, data = url.partition(",")
            if url.startswith("data:") and (not head.endswith(";base64") or not _b64(data)):
                return f"Invalid 'input[2].output[{n}].image_url'. Expected a base64-encoded data URL."
            continue
        return (
            f"Invalid value: '{kind}'. Supported values are: 'input_text', 'input_image', and 'input_file'."
        )
    return None


# --- OpenAI Chat Completions ---------------------------------------------------------------------
def chat_stream(call: bool, tool: str = TOOL) -> bytes:
    if call:
        tool_call = {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": tool, "arguments": "{}"},
        }
        chunks = [
            {"index": 0, "delta": {"role": "assistant", "tool_calls": [tool_call]}, "finish_reason": None}
        ]
        finish = "tool_calls"
    else:
        chunks = [
            {"index": 0, "delta": {"role": "assistant", "content": "I read the note."}, "finish_reason": None}
        ]
        finish = "stop"
    chunks.append({"index": 0, "delta": {}, "finish_reason": finish})
    usage = {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}
    events = [{"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [c]} for c in chunks]
    events[-1]["usage"] = usage
    return _sse(*events, named=False)


def check_chat_tool_message(message: dict[str, Any]) -> str | None:
    content = message.get("content")
    if isinstance(content, str):
        return None
    if isinstance(content, list) and all(p.get("type") == "text" for p in content):
        return None
    return (
        "Invalid 'messages[2].content': a tool message's content must be a string or an array of text parts."
    )


class MediaEmulator(FixtureServer):
    """One provider's tool loop: a call of ``TOOL``, then the strict check of its result."""

    def __init__(self, kind: str, tool: str = TOOL) -> None:
        super().__init__()
        self.kind = kind
        self.tool = tool
        self.tool_results: list[Any] = []  # what round 2 received as the tool result

    def reply_for(self, request: Recorded) -> Reply:
        body = request.json()
        if self.kind == "anthropic":
            results = [
                b
                for m in body["messages"]
                if isinstance(m["content"], list)
                for b in m["content"]
                if b.get("type") == "tool_result"
            ]
            if not results:
                return Reply.sse(anthropic_stream(call=True, tool=self.tool))
            self.tool_results.append(results[0])
            problem = check_anthropic_result(results[0])
            return anthropic_error(problem) if problem else Reply.sse(anthropic_stream(call=False))
        if self.kind == "openai_responses":
            outputs = [i for i in body["input"] if i.get("type") == "function_call_output"]
            if not outputs:
                return Reply.sse(responses_stream(call=True, tool=self.tool))
            self.tool_results.append(outputs[0])
            problem = check_responses_output(outputs[0])
            return openai_error(problem, "input") if problem else Reply.sse(responses_stream(call=False))
        tools = [m for m in body["messages"] if m.get("role") == "tool"]
        if not tools:
            return Reply.sse(chat_stream(call=True, tool=self.tool))
        self.tool_results.append(tools[0])
        problem = check_chat_tool_message(tools[0])
        return openai_error(problem, "messages") if problem else Reply.sse(chat_stream(call=False))

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await self._read_request(reader)
            if request is None:
                return
            if request.path.endswith("/count_tokens"):
                # No pre-flight counting here: the loop keeps its own estimate (not recorded).
                await self._send(Reply.json(404, {"type": "error", "error": {"type": "not_found_error", "message": "Not found"}}), writer)
                return
            self.requests.append(request)
            await self._send(self.reply_for(request), writer)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
