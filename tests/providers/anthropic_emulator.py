"""A strict Anthropic Messages emulator: a real HTTP server that rejects what the API rejects.

Built from the documentation, not from our adapter (sources in docs/providers.md):

* headers: ``x-api-key`` (401 ``authentication_error``), ``anthropic-version`` (400);
* body: ``max_tokens`` required; ``system`` a string or a list of text blocks; every ``tool_use``
  answered by a ``tool_result`` in the next message and every ``tool_result`` answering a
  ``tool_use`` of the previous one (the API's wordings);
* prompt caching (platform.claude.com/docs/en/build-with-claude/prompt-caching): at most 4 blocks
  with ``cache_control`` ("A maximum of 4 blocks with cache_control may be provided. Found N."),
  ``type`` "ephemeral" and ``ttl`` "5m"/"1h" only, never on ``thinking``/``redacted_thinking``
  ("…thinking.cache_control: Extra inputs are not permitted"), never on empty text ("cache_control
  cannot be set for empty text blocks"); with ``refuse_cache_control`` any marker is refused, as an
  endpoint without caching does;
* cache accounting: the prefix up to each breakpoint is written; a later request reads the longest
  stored prefix that ends at one of its breakpoints or up to 20 blocks before it; usage reports
  ``cache_creation_input_tokens``, ``cache_read_input_tokens`` and the rest as ``input_tokens``.

Answers come from ``responder(body) -> Turn | Reply``: a function of the request, so a resumed run
gets the same answers. Errors go out as ``{"type": "error", "error": {"type", "message"}}``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from provider_fixture_server import FixtureServer, Recorded, Reply

LOOKBACK = 20


@dataclass
class Turn:
    # A thinking block streamed first (thinking_delta + signature_delta); the emulator remembers it and
    # requires it back, byte for byte, at the start of the assistant turn that holds the tool_use.
    thinking: str = ""
    text: str = ""
    tool_uses: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    stop_reason: str | None = None
    # Cut the connection after this many SSE events (a premature EOF); None sends the whole stream.
    cut_after: int | None = None


class Rejected(Exception):
    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


def error_reply(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> Reply:
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_emulated"}
    return Reply.json(status, body, headers)


def _invalid(message: str) -> Rejected:
    return Rejected(400, "invalid_request_error", message)


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def _check_marker(where: str, block: dict[str, Any]) -> None:
    marker = block["cache_control"]
    if block.get("type") in ("thinking", "redacted_thinking"):
        raise _invalid(f"{where}.{block['type']}.cache_control: Extra inputs are not permitted")
    if block.get("type") == "text" and not block.get("text"):
        raise _invalid("cache_control cannot be set for empty text blocks")
    if not isinstance(marker, dict) or marker.get("type") != "ephemeral":
        raise _invalid(f"{where}.cache_control.type: Input should be 'ephemeral'")
    if marker.get("ttl", "5m") not in ("5m", "1h"):
        raise _invalid(f"{where}.cache_control.ttl: Input should be '5m' or '1h'")


class StrictAnthropic(FixtureServer):
    def __init__(
        self,
        responder: Callable[[dict[str, Any]], Turn | Reply],
        *,
        refuse_cache_control: bool = False,
        min_cacheable_tokens: int = 64,
    ) -> None:
        super().__init__()
        self.responder = responder
        self.refuse_cache_control = refuse_cache_control
        self.min_cacheable_tokens = min_cacheable_tokens
        self.cache: set[str] = set()
        self.issued_thinking: dict[str, dict[str, Any]] = {}  # tool_use id -> the thinking block issued
        self.bodies: list[dict[str, Any]] = []
        self.counted = 0  # count_tokens requests served
        self.usages: list[dict[str, int]] = []

    # -- validation ---------------------------------------------------------------------------
    def validate(self, request: Recorded, body: dict[str, Any]) -> None:
        if not request.headers.get("x-api-key"):
            raise Rejected(401, "authentication_error", "x-api-key header is required")
        if not request.headers.get("anthropic-version"):
            raise _invalid("anthropic-version: header is required")
        if not isinstance(body.get("max_tokens"), int):
            raise _invalid("max_tokens: Field required")
        system = body.get("system")
        if system is not None and not isinstance(system, str):
            if not isinstance(system, list) or any(b.get("type") != "text" for b in system):
                raise _invalid("system: Input should be a valid string or a list of text blocks")
        self._check_pairing(body.get("messages") or [])
        self._check_thinking(body.get("messages") or [])
        self._check_markers(body)

    def _check_pairing(self, messages: list[dict[str, Any]]) -> None:
        if not messages:
            raise _invalid("messages: at least one message is required")
        for n, message in enumerate(messages):
            blocks = _blocks(message.get("content"))
            if not blocks:
                raise _invalid(f"messages.{n}: all messages must have non-empty content")
            uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
            if uses:
                following = _blocks(messages[n + 1]["content"]) if n + 1 < len(messages) else []
                answered = {b.get("tool_use_id") for b in following if b.get("type") == "tool_result"}
                missing = [u for u in uses if u not in answered]
                if missing:
                    raise _invalid(
                        f"messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately "
                        f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                        "`tool_result` block in the next message."
                    )
            results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            if results:
                previous = _blocks(messages[n - 1]["content"]) if n else []
                known = {b.get("id") for b in previous if b.get("type") == "tool_use"}
                for m, result in enumerate(results):
                    if result not in known:
                        raise _invalid(
                            f"messages.{n}.content.{m}: unexpected `tool_use_id` found in `tool_result` "
                            f"blocks: {result}. Each `tool_result` block must have a corresponding "
                            "`tool_use` block in the previous message."
                        )

    def _check_thinking(self, messages: list[dict[str, Any]]) -> None:
        # platform.claude.com thinking-tool-workflows: echo the assistant message exactly as received.
        for n, message in enumerate(messages):
            blocks = _blocks(message.get("content"))
            for block in blocks:
                issued = (
                    self.issued_thinking.get(block.get("id", "")) if block.get("type") == "tool_use" else None
                )
                if issued is None:
                    continue
                first = {k: v for k, v in blocks[0].items() if k != "cache_control"}
                if blocks[0].get("type") != "thinking":
                    raise _invalid(
                        f"messages.{n}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                        f"`{blocks[0].get('type')}`. When `thinking` is enabled, a final `assistant` message "
                        "must start with a thinking block."
                    )
                if first != issued:
                    raise _invalid(f"messages.{n}.content.0: Invalid `signature` in `thinking` block")

    def _check_markers(self, body: dict[str, Any]) -> None:
        found = 0
        for where, block in self._located_blocks(body):
            if "cache_control" not in block:
                continue
            if self.refuse_cache_control:
                raise _invalid(f"{where}.cache_control: Extra inputs are not permitted")
            _check_marker(where, block)
            found += 1
        if "cache_control" in body and self.refuse_cache_control:
            raise _invalid("cache_control: Extra inputs are not permitted")
        if found > 4:
            raise _invalid(f"A maximum of 4 blocks with cache_control may be provided. Found {found}.")

    @staticmethod
    def _located_blocks(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        located = [(f"tools.{i}", t) for i, t in enumerate(body.get("tools") or [])]
        if isinstance(body.get("system"), list):
            located += [(f"system.{i}", b) for i, b in enumerate(body["system"])]
        for n, message in enumerate(body.get("messages") or []):
            if isinstance(message.get("content"), list):
                located += [(f"messages.{n}.content.{i}", b) for i, b in enumerate(message["content"])]
        return located

    # -- cache accounting ---------------------------------------------------------------------
    def account(self, body: dict[str, Any]) -> dict[str, int]:
        blocks = list(body.get("tools") or [])
        system = body.get("system")
        blocks += _blocks(system) if system else []
        for message in body.get("messages") or []:
            blocks += [{"role": message["role"], **b} for b in _blocks(message.get("content"))]
        plain = [{k: v for k, v in b.items() if k != "cache_control"} for b in blocks]
        sizes = [max(1, len(json.dumps(b, sort_keys=True)) // 4) for b in plain]
        hashes, digest = [], hashlib.sha256()
        for b in plain:
            digest.update(json.dumps(b, sort_keys=True).encode())
            hashes.append(digest.copy().hexdigest())
        breakpoints = [i for i, b in enumerate(blocks) if "cache_control" in b]
        if "cache_control" in body and blocks:
            breakpoints.append(len(blocks) - 1)
        read_end = 0  # number of leading blocks read from the cache
        for point in breakpoints:
            for end in range(point, max(-1, point - LOOKBACK), -1):
                if hashes[end] in self.cache:
                    read_end = max(read_end, end + 1)
                    break
        write_end = read_end
        for point in breakpoints:
            if sum(sizes[: point + 1]) >= self.min_cacheable_tokens:
                self.cache.add(hashes[point])
                write_end = max(write_end, point + 1)
        read, written = sum(sizes[:read_end]), sum(sizes[read_end:write_end])
        return {
            "input_tokens": sum(sizes) - read - written,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
        }

    # -- serving ------------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await self._read_request(reader)
            if request is None:
                return
            if request.path.endswith("/count_tokens"):
                # The free pre-flight count (asked while a model's ratio is unknown): served, not
                # recorded among the Messages requests the tests inspect.
                await self._send(self._count(request), writer)
                return
            self.requests.append(request)
            await self._send(self._answer(request), writer)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    def _count(self, request: Recorded) -> Reply:
        body = json.loads(request.body)
        allowed = {"model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers"}
        extra = sorted(set(body) - allowed)
        if extra:
            return error_reply(400, "invalid_request_error", f"{extra[0]}: Extra inputs are not permitted")
        blocks = list(body.get("tools") or []) + (_blocks(body["system"]) if body.get("system") else [])
        for message in body.get("messages") or []:
            blocks += _blocks(message.get("content"))
        plain = [{k: v for k, v in b.items() if k != "cache_control"} for b in blocks]
        self.counted += 1
        return Reply.json(200, {"input_tokens": sum(max(1, len(json.dumps(b, sort_keys=True)) // 4) for b in plain)})

    def _answer(self, request: Recorded) -> Reply:
        try:
            body = json.loads(request.body)
        except json.JSONDecodeError:
            return error_reply(400, "invalid_request_error", "The request body is not valid JSON.")
        self.bodies.append(body)
        try:
            self.validate(request, body)
        except Rejected as exc:
            return error_reply(exc.status, exc.kind, exc.message)
        turn = self.responder(body)
        if isinstance(turn, Reply):
            return turn
        usage = self.account(body)
        self.usages.append(usage)
        if turn.thinking:
            block = {"type": "thinking", "thinking": turn.thinking, "signature": _signature(turn.thinking)}
            for use_id, _, _ in turn.tool_uses:
                self.issued_thinking[use_id] = block
        if not body.get("stream"):
            return Reply.json(200, message_body(turn, usage, body.get("model", "claude-emulated")))
        return sse_reply(turn, usage, body.get("model", "claude-emulated"))


def _signature(thinking: str) -> str:
    return "EqQB" + hashlib.sha256(thinking.encode()).hexdigest()


def message_body(turn: Turn, usage: dict[str, int], model: str) -> dict[str, Any]:
    """The non-streaming answer: one Message object."""
    content: list[dict[str, Any]] = []
    if turn.thinking:
        content.append(
            {"type": "thinking", "thinking": turn.thinking, "signature": _signature(turn.thinking)}
        )
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    content += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in turn.tool_uses]
    return {
        "id": "msg_emulated",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": turn.stop_reason or ("tool_use" if turn.tool_uses else "end_turn"),
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 20},
    }


def sse_reply(turn: Turn, usage: dict[str, int], model: str) -> Reply:
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_emulated",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "usage": {**usage, "output_tokens": 1},
                },
            },
        )
    ]
    index = 0
    if turn.thinking:
        start = {"type": "thinking", "thinking": "", "signature": ""}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": turn.thinking},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "signature_delta", "signature": _signature(turn.thinking)},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]
        index = 1
    if turn.text:
        at = index
        events += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": at, "content_block": {"type": "text", "text": ""}},
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": at,
                    "delta": {"type": "text_delta", "text": turn.text},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": at}),
        ]
        index += 1
    for offset, (use_id, name, arguments) in enumerate(turn.tool_uses):
        at = index + offset
        start = {"type": "tool_use", "id": use_id, "name": name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": at, "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": at, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": at}),
        ]
    stop = turn.stop_reason or ("tool_use" if turn.tool_uses else "end_turn")
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop},
                "usage": {**usage, "output_tokens": 20},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    if turn.cut_after is not None:
        events = events[: turn.cut_after]
    pieces = [f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events]
    return Reply(pieces)
