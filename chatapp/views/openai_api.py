"""The OpenAI-compatible API (``/v1/models``, ``/v1/chat/completions``), for the official OpenAI
clients and anything built on them. What is kept and what is not is in docs/api.md; the mapping
itself is ``chatapp/services/openai_compat.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from channels.db import database_sync_to_async as sync_to_async
from django.conf import settings
from django.http import HttpRequest, JsonResponse, StreamingHttpResponse
from ninja import Field, Router, Schema
from pydantic import ConfigDict

from chatapp.models import Run
from chatapp.services import openai_compat as oc
from chatapp.services import run_events
from chatapp.views.api_auth import ApiError, require_scope
from chatapp.views.htmx import api_key

router = Router(tags=["OpenAI-compatible"])
KEEPALIVE_EVERY = 15


class ModelOut(Schema):
    id: str
    object: str = "model"
    created: int = 0
    owned_by: str


class ModelList(Schema):
    object: str = "list"
    data: list[ModelOut]


class StreamOptions(Schema):
    include_usage: bool = False


class ChatCompletionIn(Schema):
    """OpenAI's request body. Sampling parameters (temperature, max_tokens, ...) are accepted and
    ignored: the provider's admin settings apply. ``tools`` from the client are refused."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(..., description="a provider's name, or provider/model (see /v1/models)")
    messages: list[dict[str, Any]]
    stream: bool = False
    stream_options: StreamOptions | None = None
    clearloop: dict[str, Any] | None = Field(
        None, description='extension: {"conversation_id": N} continues one of your conversations'
    )


@router.get("/models", response=ModelList, summary="The models a key may name")
def list_models(request: HttpRequest) -> dict[str, Any]:
    require_scope(request, "chat")
    return {"object": "list", "data": [{"id": n, "owned_by": p.label or p.name} for n, p in oc.model_names()]}


@router.post(
    "/chat/completions",
    summary="Chat completion (OpenAI-compatible; streaming with stream=true)",
    description=(
        "Starts a clearloop run with the key owner's tools and policies. Streaming sends standard "
        "`chat.completion.chunk` objects; tool activity travels in each chunk's `clearloop` field."
    ),
)
async def chat_completions(request: HttpRequest, body: ChatCompletionIn) -> Any:
    require_scope(request, "chat")
    if (body.model_extra or {}).get("tools"):
        raise ApiError(
            400,
            "clearloop runs its own tools (the key owner's); client-side tools are not accepted.",
            "tools_not_supported",
        )
    started = await sync_to_async(oc.start_completion)(api_key(request).user, body.model_dump())
    if body.stream:
        usage = bool(body.stream_options and body.stream_options.include_usage)
        response = StreamingHttpResponse(_stream(started, usage), content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response
    try:
        async with asyncio.timeout(settings.API_COMPLETION_WAIT_SECONDS):
            async for _ in run_events.follow(started.run.pk, started.run.conversation_id):
                pass
    except TimeoutError:
        raise ApiError(
            504,
            f"The run {started.run.pk} is still going; follow it at /api/runs/{started.run.pk}.",
            "still_running",
        ) from None
    return JsonResponse(await sync_to_async(_completed)(started))


def _completed(started: oc.Started) -> dict[str, Any]:
    run = Run.objects.get(pk=started.run.pk)
    if run.status == Run.Status.FAILED:
        raise ApiError(502, f"The run failed: {run.error or run.error_class}", "run_failed")
    return oc.completion(started, run, oc.tool_calls_of(run))


def _data(body: Any) -> bytes:
    return f"data: {json.dumps(body, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


async def _stream(started: oc.Started, include_usage: bool) -> AsyncIterator[bytes]:
    run = started.run
    first = {"role": "assistant", "content": ""}
    yield _data(oc.chunk(started, delta=first, ext={"type": "run", "data": oc.run_extension(run)}))
    idle = 0
    async for item in run_events.follow(run.pk, run.conversation_id):
        if isinstance(item, run_events.Idle):
            idle += 1
            if idle % KEEPALIVE_EVERY == 0:
                yield b": keep-alive\n\n"
            continue
        idle = 0
        if item.type == "delta" and item.data.get("text"):
            yield _data(oc.chunk(started, delta={"content": item.data["text"]}))
        ext = oc.extension_event(item)
        if ext is not None:
            yield _data(oc.chunk(started, delta={}, ext=ext))
    final = await sync_to_async(Run.objects.get)(pk=run.pk)
    if final.status == Run.Status.FAILED:
        # The OpenAI clients raise an APIError for an ``error`` object in the stream.
        message = f"The run failed: {final.error or final.error_class}"
        yield _data({"error": {"message": message, "type": "run_failed", "code": final.error_class or None}})
        yield b"data: [DONE]\n\n"
        return
    reason = await sync_to_async(oc.finish_reason)(final)
    yield _data(
        oc.chunk(started, delta={}, finish=reason, ext={"type": "run", "data": oc.run_extension(final)})
    )
    if include_usage:
        body = oc.chunk(started, delta={})
        body["choices"] = []
        body["usage"] = oc.usage_of(final)
        yield _data(body)
    yield b"data: [DONE]\n\n"
