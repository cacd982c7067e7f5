"""The demo model's HTTP endpoints, as a small Starlette app mounted by the web process.

Routes (relative to the mount point, e.g. ``/demo-llm``): ``GET /v1/models``,
``POST /v1/chat/completions`` (streaming and not).
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

from agent.demo_model import script, wire
from agent.demo_model.plan import Plan

MODEL = "clearloop-demo"


@dataclass(frozen=True, slots=True)
class DemoModelSettings:
    tokens_per_second: float = 40.0
    # Send this many word-pieces per content chunk (1 = one token per chunk).
    pieces_per_chunk: int = 1


def completion_id(body: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    return f"chatcmpl-demo-{digest[:24]}"


def error_response(status: int, message: str, code: str | None, kind: str = "invalid_request_error") -> Response:
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return JSONResponse(body, status_code=status)


def create_app(settings: DemoModelSettings | None = None) -> Starlette:
    settings = settings or DemoModelSettings()

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
        if body.get("stream"):
            return StreamingResponse(
                stream_plan(body, plan, settings),
                media_type="text/event-stream",
                headers={"cache-control": "no-cache"},
            )
        return JSONResponse(nonstream_body(body, plan))

    return Starlette(routes=[Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"])])


def call_ids(body: dict[str, Any], plan: Plan) -> list[str]:
    seed = completion_id(body)
    return [f"call_{hashlib.sha256(f'{seed}:{i}'.encode()).hexdigest()[:20]}" for i in range(len(plan.tool_calls))]


def nonstream_body(body: dict[str, Any], plan: Plan) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": "".join(plan.text_pieces) or None}
    if plan.tool_calls:
        message["tool_calls"] = wire.tool_call_payload(plan, call_ids(body, plan))
    return {
        "id": completion_id(body),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": plan.finish_reason}],
        "usage": wire.usage_dict(body, plan),
    }


async def stream_plan(body: dict[str, Any], plan: Plan, settings: DemoModelSettings) -> AsyncIterator[bytes]:
    writer = wire.ChunkWriter(completion_id(body), MODEL, int(time.time()))
    delay = 1.0 / settings.tokens_per_second if settings.tokens_per_second > 0 else 0.0
    yield wire.encode(writer.chunk({"role": "assistant", "content": ""}))
    pieces = plan.text_pieces
    step = max(1, settings.pieces_per_chunk)
    for start in range(0, len(pieces), step):
        if delay:
            await asyncio.sleep(delay)
        yield wire.encode(writer.chunk({"content": "".join(pieces[start : start + step])}))
    for index, call in enumerate(wire.tool_call_payload(plan, call_ids(body, plan))):
        head = {"index": index, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"], "arguments": ""}}
        yield wire.encode(writer.chunk({"tool_calls": [head]}))
        args = call["function"]["arguments"]
        for cut in range(0, len(args), 16):
            yield wire.encode(writer.chunk({"tool_calls": [{"index": index, "function": {"arguments": args[cut : cut + 16]}}]}))
    yield wire.encode(writer.chunk({}, finish_reason=plan.finish_reason))
    if (body.get("stream_options") or {}).get("include_usage"):
        yield wire.encode(writer.usage(wire.usage_dict(body, plan)))
    yield wire.encode("[DONE]")
