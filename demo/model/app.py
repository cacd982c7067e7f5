"""The demo model's HTTP endpoints, as a small Starlette app mounted by the web process.

Routes (relative to the mount point, e.g. ``/demo-llm``): ``GET /v1/models``,
``POST /v1/chat/completions`` (streaming and not).

Wire faults asked for with ``[[demo:NAME]]`` fire once per conversation (keyed by the user's message)
by default, so a client's retry or the next round goes through: that is what exercises the retry and
recovery paths. ``fault_once=False`` makes them fire on every request.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from demo.model import script, wire
from demo.model.history import read_turn
from demo.model.plan import Plan

MODEL = "clearloop-demo"


@dataclass(frozen=True, slots=True)
class DemoModelSettings:
    tokens_per_second: float = 40.0
    # Send this many word-pieces per content chunk (1 = one token per chunk).
    pieces_per_chunk: int = 1
    fault_once: bool = True
    stall_seconds: float = 30.0  # [[demo:stall]]: silence after the first chunk
    slow_tokens_per_second: float = 4.0  # [[demo:slow]]
    context_window: int = 8_192  # only quoted in the [[demo:context-overflow]] error


def completion_id(body: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    return f"chatcmpl-demo-{digest[:24]}"


def error_response(
    status: int,
    message: str,
    code: str | None,
    kind: str = "invalid_request_error",
    headers: dict | None = None,
) -> Response:
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return JSONResponse(body, status_code=status, headers=headers)


class FaultBook:
    """Which faults already fired, per conversation (the user's message) and fault name."""

    # Bounded: the oldest entries go first, so a stream of distinct messages cannot grow the process.
    MAX_ENTRIES = 10_000

    def __init__(self, once: bool) -> None:
        self.once = once
        self.fired: dict[str, None] = {}  # insertion-ordered set

    def take(self, fault: str, body: dict[str, Any]) -> bool:
        key = fault + ":" + hashlib.sha256(read_turn(body).user_text.encode()).hexdigest()
        if self.once and key in self.fired:
            return False
        self.fired[key] = None
        while len(self.fired) > self.MAX_ENTRIES:
            del self.fired[next(iter(self.fired))]
        return True


def fault_response(
    plan: Plan, body: dict[str, Any], book: FaultBook, settings: DemoModelSettings
) -> Response | None:
    if "429" in plan.faults and book.take("429", body):
        return error_response(
            429,
            "Rate limit reached for clearloop-demo (demo fault).",
            "rate_limit_exceeded",
            "rate_limit_error",
            headers={"retry-after": "0"},
        )
    if "500" in plan.faults and book.take("500", body):
        return error_response(500, "The demo model had an internal error (demo fault).", None, "server_error")
    if "context-overflow" in plan.faults and book.take("context-overflow", body):
        message = (
            f"This model's maximum context length is {settings.context_window} tokens. "
            "However, your messages resulted in more tokens (demo fault). "
            "Please reduce the length of the messages."
        )
        return error_response(400, message, "context_length_exceeded")
    if "malformed" in plan.faults and not body.get("stream") and book.take("malformed", body):
        return Response('{"id": "chatcmpl-demo", "choices": [', media_type="application/json")
    return None


def create_app(settings: DemoModelSettings | None = None) -> Starlette:
    settings = settings or DemoModelSettings()
    book = FaultBook(settings.fault_once)

    async def models(_: Request) -> Response:
        data = [{"id": MODEL, "object": "model", "created": 0, "owned_by": "clearloop-demo"}]
        return JSONResponse({"object": "list", "data": data})

    async def chat(request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError):
            return error_response(400, "We could not parse the JSON body of your request.", None)
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return error_response(400, "'messages' is a required property", None)
        plan = script.plan_reply(body)
        failed = fault_response(plan, body, book, settings)
        if failed is not None:
            return failed
        if body.get("stream"):
            stream_faults: set[str] = {
                f for f in ("stall", "malformed") if f in plan.faults and book.take(f, body)
            }
            return StreamingResponse(
                stream_plan(body, plan, settings, stream_faults),
                media_type="text/event-stream",
                headers={"cache-control": "no-cache"},
            )
        return JSONResponse(nonstream_body(body, plan))

    routes = [Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"])]
    return Starlette(routes=routes)


def call_ids(body: dict[str, Any], plan: Plan, choice: int = 0) -> list[str]:
    seed = completion_id(body)
    return [
        f"call_{hashlib.sha256(f'{seed}:{choice}:{i}'.encode()).hexdigest()[:20]}"
        for i in range(len(plan.tool_calls))
    ]


def choices_of(plan: Plan) -> list[Plan]:
    return [plan, *plan.extra_choices]


def nonstream_body(body: dict[str, Any], plan: Plan) -> dict[str, Any]:
    choices = []
    for index, choice in enumerate(choices_of(plan)):
        message: dict[str, Any] = {"role": "assistant", "content": "".join(choice.text_pieces) or None}
        if choice.tool_calls:
            message["tool_calls"] = wire.tool_call_payload(choice, call_ids(body, choice, index))
        choices.append(
            {"index": index, "message": message, "logprobs": None, "finish_reason": choice.finish_reason}
        )
    return {
        "id": completion_id(body),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL,
        "choices": choices,
        "usage": wire.usage_dict(body, plan),
    }


async def stream_plan(
    body: dict[str, Any],
    plan: Plan,
    settings: DemoModelSettings,
    faults: set[str] | frozenset[str] = frozenset(),
) -> AsyncIterator[bytes]:
    writer = wire.ChunkWriter(completion_id(body), MODEL, int(time.time()))
    rate = settings.slow_tokens_per_second if "slow" in plan.faults else settings.tokens_per_second
    delay = 1.0 / rate if rate > 0 else 0.0
    yield wire.encode(writer.chunk({"role": "assistant", "content": ""}))
    if "stall" in faults:
        await asyncio.sleep(settings.stall_seconds)  # the client's idle timeout must notice first
    if "malformed" in faults:
        yield b'data: {"id": "chatcmpl-demo", "choices": [{"index": 0, "delta": {"content": "oops"\n\n'
        return
    for index, choice in enumerate(choices_of(plan)):
        async for chunk in _choice_chunks(writer, body, choice, index, settings, delay):
            yield chunk
    if (body.get("stream_options") or {}).get("include_usage"):
        yield wire.encode(writer.usage(wire.usage_dict(body, plan)))
    yield wire.encode("[DONE]")


async def _choice_chunks(
    writer: wire.ChunkWriter,
    body: dict[str, Any],
    plan: Plan,
    index: int,
    settings: DemoModelSettings,
    delay: float,
) -> AsyncIterator[bytes]:
    pieces = plan.text_pieces
    step = max(1, settings.pieces_per_chunk)
    for start in range(0, len(pieces), step):
        if delay:
            await asyncio.sleep(delay)
        yield wire.encode(writer.chunk({"content": "".join(pieces[start : start + step])}, index=index))
    for n, call in enumerate(wire.tool_call_payload(plan, call_ids(body, plan, index))):
        fn = call["function"]
        head = {
            "index": n,
            "id": call["id"],
            "type": "function",
            "function": {"name": fn["name"], "arguments": ""},
        }
        yield wire.encode(writer.chunk({"tool_calls": [head]}, index=index))
        args = fn["arguments"]
        for cut in range(0, len(args), 16):
            delta = {"tool_calls": [{"index": n, "function": {"arguments": args[cut : cut + 16]}}]}
            yield wire.encode(writer.chunk(delta, index=index))
    yield wire.encode(writer.chunk({}, finish_reason=plan.finish_reason, index=index))
