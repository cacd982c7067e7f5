"""A strict Anthropic Messages emulator with thinking (Claude Fable 5.1: adaptive thinking always on,
preserved thinking).

Rules enforced, each as the API words it (sources in docs/providers.md):

* "Echo the assistant message exactly as received": a changed thinking text or signature is
  400 invalid_request_error "messages.N.content.M: Invalid `signature` in `thinking` block";
  a changed redacted_thinking ``data`` likewise.
* "When `thinking` is enabled, a final `assistant` message must start with a thinking block
  (preceeding the lastmost set of `tool_use` and `tool_result` blocks)": 400 with the API's wording.
* Preserved thinking: a block is valid only if nothing before it (system, tools, earlier messages)
  changed since it was produced. The signature here binds the block to a hash of that prefix
  (``cache_control`` markers excluded: they move every round and are not content). The wording of
  this 400 is not documented; ours names the rule.
* tool_result blocks must answer tool_use blocks of the previous assistant message (the real 400
  recorded in anthropic-sdk-python).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from replay_emulator_http import PrefixCache, json_response, seal, sealed_ok, sse
from replay_seed import FINAL_TEXT, reasoning_for, round_calls
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

MUST_START = (
    "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. When "
    "`thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the "
    "lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from "
    "previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)
BAD_SIGNATURE = "messages.{i}.content.{j}: Invalid `signature` in `thinking` block"


def _strip_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache_control(v) for v in value]
    return value


def prefix_hash(body: dict[str, Any], upto: int) -> str:
    """system + tools + messages[:upto], as content (formatting and cache markers ignored)."""
    system = body.get("system")
    if isinstance(system, list):  # a block list and the same text as a string are the same prefix
        system = "\n\n".join(b.get("text", "") for b in system if isinstance(b, dict))
    # A string content is one text block: the API compares content, not its spelling.
    messages = [{**m, "content": _blocks(m)} for m in body["messages"][:upto]]
    prefix = {"system": system, "tools": body.get("tools"), "messages": messages}
    canonical = json.dumps(_strip_cache_control(prefix), ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def error(message: str) -> Response:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}, "request_id": "req_emulator"}
    return json_response(400, body)


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def results_in_turn(messages: list[dict[str, Any]]) -> int:
    """tool_result blocks since the last user message that carries the user's own words."""
    count = 0
    for message in reversed(messages):
        if message["role"] != "user":
            continue
        blocks = _blocks(message)
        if not blocks or any(b.get("type") != "tool_result" for b in blocks):
            break
        count += len(blocks)
    return count


@dataclass
class AnthropicEmulator:
    model_prefix: str = "claude-"
    requests: list[dict[str, Any]] = field(default_factory=list)
    redacted_in_round_one: bool = True
    require_key: bool = True  # a test whose worker process holds no key turns this off
    cache: PrefixCache = field(default_factory=PrefixCache)
    # A block type no client knows yet after the thinking (a future reasoning shape), streamed with a
    # delta type of its own; the API does not require it back.
    unknown_shape: bool = False

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/messages", self.endpoint, methods=["POST"])])

    async def endpoint(self, request: Request) -> Response:
        body = json.loads(await request.body())
        self.requests.append(body)
        keyless = self.require_key and not request.headers.get("x-api-key")
        if request.headers.get("anthropic-version") != "2023-06-01" or keyless:
            return json_response(401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
        problem = self.validate(body)
        if problem:
            return error(problem)
        message = self.answer(body)
        if body.get("stream"):
            return sse(self.events(message))
        return json_response(200, message)

    # -- validation ------------------------------------------------------------------------------
    def validate(self, body: dict[str, Any]) -> str | None:
        if "max_tokens" not in body:
            return "max_tokens: Field required"
        messages = body.get("messages") or []
        for i, message in enumerate(messages):
            if i and message.get("role") == messages[i - 1].get("role"):
                return f"messages: roles must alternate between \"user\" and \"assistant\", but found multiple \"{message['role']}\" roles in a row"
        return self._tool_pairing(messages) or self._markers(body) or self._thinking(body, messages)

    @staticmethod
    def _markers(body: dict[str, Any]) -> str | None:
        """Prompt caching's rules on cache_control (the API's wordings, docs/providers.md)."""
        located = [(f"tools.{i}", b) for i, b in enumerate(body.get("tools") or ())]
        if isinstance(body.get("system"), list):
            located += [(f"system.{i}", b) for i, b in enumerate(body["system"])]
        for i, message in enumerate(body.get("messages") or ()):
            if isinstance(message.get("content"), list):
                located += [(f"messages.{i}.content.{j}", b) for j, b in enumerate(message["content"])]
        marked = [(where, b) for where, b in located if isinstance(b, dict) and "cache_control" in b]
        if len(marked) > 4:
            return f"A maximum of 4 blocks with cache_control may be provided. Found {len(marked)}."
        for where, block in marked:
            if block.get("type") in ("thinking", "redacted_thinking"):
                return f"{where}.{block['type']}.cache_control: Extra inputs are not permitted"
            if block.get("type") == "text" and not block.get("text"):
                return "cache_control cannot be set for empty text blocks"
        return None

    @staticmethod
    def prompt_blocks(body: dict[str, Any]) -> list[Any]:
        """The prompt in cache prefix order: tools, system, then every message's blocks."""
        system = body.get("system")
        blocks: list[Any] = list(body.get("tools") or ())
        blocks += system if isinstance(system, list) else ([{"type": "text", "text": system}] if system else [])
        for message in body.get("messages") or ():
            blocks += [{"role": message["role"], **b} for b in _blocks(message)]
        return blocks

    @staticmethod
    def _tool_pairing(messages: list[dict[str, Any]]) -> str | None:
        previous: set[str] = set()
        for i, message in enumerate(messages):
            blocks = _blocks(message)
            if message["role"] == "user":
                for block in blocks:
                    if block.get("type") == "tool_result" and block.get("tool_use_id") not in previous:
                        return (f"messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: "
                                f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                                "`tool_use` block in the previous message.")
            previous = {b.get("id") for b in blocks if b.get("type") == "tool_use"}
        return None

    def _thinking(self, body: dict[str, Any], messages: list[dict[str, Any]]) -> str | None:
        for i, message in enumerate(messages):
            if message["role"] != "assistant":
                continue
            for j, block in enumerate(_blocks(message)):
                kind = block.get("type")
                if kind == "thinking":
                    expected = f"{block.get('thinking')}\n{prefix_hash(body, i)}"
                    if not sealed_ok("thinking", expected, block.get("signature")):
                        return BAD_SIGNATURE.format(i=i, j=j) + self._why(body, i, block)
                elif kind == "redacted_thinking" and not sealed_ok("redacted", prefix_hash(body, i), block.get("data")):
                    return f"messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block"
        last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=None)
        if last is not None and any(b.get("type") == "tool_use" for b in _blocks(messages[last])):
            first = _blocks(messages[last])[0].get("type")
            if first not in ("thinking", "redacted_thinking"):
                return MUST_START.format(i=last, found=first)
        return None

    def _why(self, body: dict[str, Any], i: int, block: dict[str, Any]) -> str:
        # Tell a changed prefix apart from a changed block, as preserved thinking does.
        for seen in self.requests[:-1]:
            for k in range(len(seen.get("messages") or []) + 1):
                if sealed_ok("thinking", f"{block.get('thinking')}\n{prefix_hash(seen, k)}", block.get("signature")):
                    return " (preserved thinking: the system prompt, tools or messages before this block changed since it was produced)"
        return ""

    # -- the answer ------------------------------------------------------------------------------
    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        seen = results_in_turn(messages)
        here = prefix_hash(body, len(messages))
        thinking = reasoning_for(seen)
        content: list[dict[str, Any]] = [
            {"type": "thinking", "thinking": thinking, "signature": seal("thinking", f"{thinking}\n{here}")}
        ]
        if seen == 0 and self.redacted_in_round_one:
            content.append({"type": "redacted_thinking", "data": seal("redacted", here)})
        if self.unknown_shape:
            content.append({"type": "thinking_digest", "digest": f"摘要 {seen}", "weight": 0.5})
        calls = round_calls(seen)
        if calls is None:
            content.append({"type": "text", "text": FINAL_TEXT})
        for position, (name, arguments) in enumerate(calls or ()):
            content.append({"type": "tool_use", "id": f"toolu_{seen:02d}_{position}", "name": name,
                            "input": json.loads(arguments)})
        # Counted from the request; cache reads and writes as the breakpoints (or the top-level
        # automatic marker, on the last block) decide; input_tokens is what is neither.
        blocks = self.prompt_blocks(body)
        if isinstance(body.get("cache_control"), dict) and blocks:
            blocks[-1] = {**blocks[-1], "cache_control": body["cache_control"]}
        read, written, total = self.cache.breakpoints(blocks)
        usage = {"input_tokens": total - read - written, "output_tokens": 60,
                 "cache_creation_input_tokens": written, "cache_read_input_tokens": read}
        return {"id": f"msg_emu_{seen}", "type": "message", "role": "assistant", "model": body["model"],
                "content": content, "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
                "usage": usage}

    @staticmethod
    def events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        start = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 1}}
        out: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
        for index, block in enumerate(message["content"]):
            kind = block["type"]

            def delta(d: dict[str, Any], index: int = index) -> tuple[str, dict[str, Any]]:
                return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})

            if kind == "thinking":
                first = {"type": "thinking", "thinking": "", "signature": ""}
                out.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": first}))
                text = block["thinking"]
                out += [delta({"type": "thinking_delta", "thinking": p}) for p in (text[:9], text[9:])]
                out.append(delta({"type": "signature_delta", "signature": block["signature"]}))
            elif kind == "redacted_thinking":
                out.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": block}))
            elif kind == "thinking_digest":
                first = {**block, "digest": ""}
                out.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": first}))
                out.append(delta({"type": "digest_delta", "digest": block["digest"]}))
            elif kind == "text":
                first = {"type": "text", "text": ""}
                out.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": first}))
                out += [delta({"type": "text_delta", "text": p}) for p in (block["text"][:4], block["text"][4:])]
            else:
                first = {**block, "input": {}}
                out.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": first}))
                raw = json.dumps(block["input"], ensure_ascii=False)
                out += [delta({"type": "input_json_delta", "partial_json": p}) for p in ("", raw[:6], raw[6:])]
            out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
            if index == 0:
                out.append(("ping", {"type": "ping"}))
        final = {"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                 "usage": message["usage"]}
        return [*out, ("message_delta", final), ("message_stop", {"type": "message_stop"})]
