"""The native REST API (``/api/...``): conversations, messages, runs with their trace, a run's events
as SSE, cancel, approvals, workspace files. Each operation asks the same access rules (chatapp.access)
and calls the same services as the browser's views, so limits, policies and the audit log apply alike.

Scopes: ``chat`` writes (create, send, cancel) and reads one's own conversations and runs; ``traces``
reads runs and whole traces (of others' conversations too, for auditors and holders of
view_conversation); ``approve`` lists and decides approvals (and the key's user must be an approver).
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any, Literal, cast

from channels.db import database_sync_to_async as sync_to_async
from django.contrib.auth.models import User
from django.http import FileResponse, HttpRequest, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema, Status
from ninja.security import SessionAuth

from chatapp.access import can_view_conversation, owned_conversation_or_404, viewable_run_or_404
from chatapp.models import Conversation, Message, ProviderConfig, Run, ToolCall
from chatapp.services import approvals, run_events, workspace_files
from chatapp.services.conversations import without_drafts
from chatapp.services.limits import model_allowed
from chatapp.services.providers import default_provider
from chatapp.services.runs import request_cancel, start_run
from chatapp.services.trace import run_summary, run_trace
from chatapp.streaming import StreamedFileResponse
from chatapp.views.api_auth import ApiError, KeyAuth, require_scope
from chatapp.views.htmx import api_key

router = Router(tags=["clearloop"])
KEEPALIVE_EVERY = 15  # idle wake-ups (about a second each) between SSE comments


class ConversationIn(Schema):
    title: str = Field("New conversation", max_length=200)
    provider: str | None = Field(None, description="a provider's name; the default provider if absent")
    model: str = Field("", max_length=120, description="a model the provider allows; its own if empty")


class ConversationOut(Schema):
    id: int
    title: str
    provider: str | None
    model: str
    created_at: datetime
    updated_at: datetime


class MessageOut(Schema):
    id: int
    role: str
    content: str
    run_id: int | None
    partial: bool
    created_at: datetime


class ConversationDetail(ConversationOut):
    messages: list[MessageOut]


class SendIn(Schema):
    text: str = Field(..., description="the user's message")


class RunOut(Schema):
    run_id: int
    conversation_id: int
    status: str
    provider: str
    model: str
    error_class: str | None
    error: str | None
    text: str
    usage: dict[str, Any]
    cost: dict[str, Any]
    rounds_count: int
    tool_calls_count: int
    created_at: str | None
    started_at: str | None
    finished_at: str | None


class ApprovalOut(Schema):
    id: int
    call_id: str
    run_id: int
    conversation_id: int
    user: str
    name: str
    server: str | None
    arguments: str
    risk: str
    definition_hash: str
    since: datetime


class DecisionIn(Schema):
    decision: Literal["approve", "deny"]
    reason: str = Field("", max_length=2000)


class DecisionOut(Schema):
    id: int
    decision: str
    by: str


def _conversation_out(convo: Conversation) -> dict[str, Any]:
    return {
        "id": convo.pk,
        "title": convo.title,
        "provider": convo.provider.name if convo.provider is not None else None,
        "model": convo.model_override,
        "created_at": convo.created_at,
        "updated_at": convo.updated_at,
    }


@router.get("/conversations", response=list[ConversationOut], summary="Your conversations, newest first")
def list_conversations(request: HttpRequest, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
    require_scope(request, "chat", "traces")
    # The web's empty draft (each signed-in visitor of the home page has one) is not a conversation yet.
    rows = without_drafts(
        Conversation.objects.filter(owner_id=request.user.pk, deleted_at__isnull=True)
    ).select_related("provider")
    limit = max(1, min(limit, 200))
    return [_conversation_out(c) for c in rows[max(0, offset) : max(0, offset) + limit]]


@router.post("/conversations", response={201: ConversationOut}, summary="Start a conversation")
def create_conversation(request: HttpRequest, body: ConversationIn) -> Status:
    require_scope(request, "chat")
    from chatapp.access import refuse_auditors

    refuse_auditors(request.user)
    provider = None
    if body.provider:
        provider = ProviderConfig.objects.filter(name=body.provider, enabled=True).first()
        if provider is None:
            raise ApiError(422, f"No enabled provider named {body.provider!r}.", "unknown_provider")
    if body.model and not model_allowed(provider or default_provider(), body.model):
        raise ApiError(422, f"The model {body.model!r} is not offered by that provider.", "model_not_allowed")
    convo = Conversation.objects.create(
        owner=cast(User, request.user),  # authenticated: the API's auth refused anyone else
        title=body.title.strip() or "New conversation",
        provider=provider,
        model_override=body.model,
    )
    return Status(201, _conversation_out(convo))


@router.get(
    "/conversations/{conversation_id}", response=ConversationDetail, summary="A conversation and its messages"
)
def get_conversation(request: HttpRequest, conversation_id: int) -> dict[str, Any]:
    convo = _readable_conversation(request, conversation_id)
    messages = convo.messages.filter(role__in=(Message.Role.USER, Message.Role.ASSISTANT))
    return {
        **_conversation_out(convo),
        "messages": [
            {
                "id": m.pk,
                "role": m.role,
                "content": m.content,
                "run_id": m.run_id,
                "partial": m.partial,
                "created_at": m.created_at,
            }
            for m in messages
        ],
    }


def _readable_conversation(request: HttpRequest, conversation_id: int) -> Conversation:
    """Own conversations with ``chat``; others' too with ``traces`` when the user may see them."""
    require_scope(request, "chat", "traces")
    convo = Conversation.objects.filter(pk=conversation_id).first()
    own = convo is not None and convo.owner_id == request.user.pk and not convo.deleted_at
    others = (
        convo is not None
        and "traces" in api_key(request).scopes
        and can_view_conversation(request.user, convo)
    )
    if convo is None or not (own or others):
        raise ApiError(404, "No such conversation.", "not_found")
    return convo


class FileOut(Schema):
    path: str
    size: int
    modified: datetime
    origin: str


@router.get(
    "/conversations/{conversation_id}/files",
    response=list[FileOut],
    summary="The conversation's workspace files (who wrote each)",
)
def list_files(request: HttpRequest, conversation_id: int) -> list[dict[str, Any]]:
    convo = _readable_conversation(request, conversation_id)
    return [
        {"path": e.path, "size": e.size, "modified": e.modified, "origin": e.origin}
        for e in workspace_files.list_files(convo)
    ]


@router.get(
    "/conversations/{conversation_id}/files/{path:path}",
    summary="Download one workspace file",
    openapi_extra={
        "responses": {200: {"content": {"application/octet-stream": {}}, "description": "the file"}}
    },
)
def download_file(request: HttpRequest, conversation_id: int, path: str) -> FileResponse:
    convo = _readable_conversation(request, conversation_id)
    try:
        handle, _, safe = workspace_files.open_for_reading(convo, path)
    except workspace_files.FileRefused as exc:
        raise ApiError(404, str(exc), "no_such_file") from None
    response = StreamedFileResponse(request, handle, as_attachment=True, filename=safe.parts[-1])
    response["Content-Type"] = mimetypes.guess_type(safe.parts[-1])[0] or "application/octet-stream"
    response["X-Content-Type-Options"] = "nosniff"
    return response


@router.post(
    "/conversations/{conversation_id}/messages",
    response={202: RunOut},
    summary="Send a message: starts a run (follow it with /api/runs/{id}/events)",
)
def send_message(request: HttpRequest, conversation_id: int, body: SendIn) -> Status:
    require_scope(request, "chat")
    convo = owned_conversation_or_404(request.user, conversation_id)
    run = start_run(convo, body.text)
    run.refresh_from_db()
    return Status(202, run_summary(run))


@router.get("/runs/{run_id}", response=RunOut, summary="A run's status, answer, usage and cost")
def get_run(request: HttpRequest, run_id: int) -> dict[str, Any]:
    require_scope(request, "chat", "traces")
    return run_summary(_readable_run(request, run_id))


@router.get(
    "/runs/{run_id}/trace",
    summary="A run's whole trace: rounds, tool calls, approvals, events",
    description="Also open to the browser's session (the chat page links here).",
    auth=[KeyAuth(), SessionAuth()],
)
def get_trace(request: HttpRequest, run_id: int) -> dict[str, Any]:
    require_scope(request, "traces")
    return run_trace(viewable_run_or_404(request.user, run_id))


def _readable_run(request: HttpRequest, run_id: int) -> Run:
    run = viewable_run_or_404(request.user, run_id)
    held = set(api_key(request).scopes)
    if "traces" not in held and run.conversation.owner_id != request.user.pk:
        raise ApiError(404, "No such run.", "not_found")  # chat scope: one's own runs only
    return run


@router.get(
    "/runs/{run_id}/events",
    summary="A run's events as Server-Sent Events",
    description=(
        "`text/event-stream`: each event has `id:` = its sequence number, `event:` = its type and "
        "`data:` = its JSON payload; the stream ends after the run does. To resume after a dropped "
        "connection send `Last-Event-ID` (or `?after=`) with the last id received: every later event "
        "is sent once, in order."
    ),
    openapi_extra={"responses": {200: {"content": {"text/event-stream": {}}, "description": "the events"}}},
)
def run_events_stream(request: HttpRequest, run_id: int, after: int | None = None) -> StreamingHttpResponse:
    require_scope(request, "chat", "traces")
    run = _readable_run(request, run_id)
    start = _last_event_id(request, after)
    response = StreamingHttpResponse(
        _sse(run.pk, run.conversation_id, start), content_type="text/event-stream"
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def _last_event_id(request: HttpRequest, after: int | None) -> int:
    raw = request.headers.get("Last-Event-ID")
    if raw is None:
        return max(0, after or 0)
    if not raw.strip().isdigit() or len(raw) > 15:
        raise ApiError(400, "Last-Event-ID must be an event's sequence number.", "bad_last_event_id")
    return int(raw)


async def _sse(run_id: int, conversation_id: int, after: int) -> AsyncIterator[bytes]:
    idle = 0
    yield b"retry: 1000\n\n"
    async for item in run_events.follow(run_id, conversation_id, after):
        if isinstance(item, run_events.Idle):
            idle += 1
            if idle % KEEPALIVE_EVERY == 0:
                yield b": keep-alive\n\n"
            continue
        idle = 0
        data = json.dumps(item.data, ensure_ascii=False, separators=(",", ":"))
        yield f"id: {item.seq}\nevent: {item.type}\ndata: {data}\n\n".encode()
    status = await sync_to_async(
        lambda: Run.objects.filter(pk=run_id).values_list("status", flat=True).first()
    )()
    yield f"event: end\ndata: {json.dumps({'status': status})}\n\n".encode()


@router.post("/runs/{run_id}/cancel", response=RunOut, summary="Stop a run")
def cancel_run(request: HttpRequest, run_id: int) -> dict[str, Any]:
    require_scope(request, "chat")
    run = viewable_run_or_404(request.user, run_id)
    owned_conversation_or_404(request.user, run.conversation_id)
    request_cancel(run)
    return run_summary(run)


def _approver(request: HttpRequest) -> None:
    require_scope(request, "approve")
    if not approvals.may_approve(request.user):
        raise ApiError(403, f"{request.user.get_username()} may not approve tool calls.", "not_an_approver")


@router.get("/approvals", response=list[ApprovalOut], summary="Tool calls waiting for a decision")
def list_approvals(request: HttpRequest) -> list[dict[str, Any]]:
    _approver(request)
    return [
        {
            "id": c.pk,
            "call_id": c.call_id,
            "run_id": c.run_id,
            "conversation_id": c.run.conversation_id,
            "user": c.run.conversation.owner.get_username(),
            "name": c.name,
            "server": c.server or None,
            "arguments": c.arguments,
            "risk": c.risk,
            "definition_hash": c.definition_hash,
            "since": c.created_at,
        }
        for c in approvals.pending()
    ]


@router.post("/approvals/{call_id}", response=DecisionOut, summary="Approve or deny a waiting tool call")
def decide_approval(request: HttpRequest, call_id: int, body: DecisionIn) -> dict[str, Any]:
    _approver(request)
    get_object_or_404(ToolCall, pk=call_id)
    try:
        approval = approvals.decide(
            call_id, request.user, approve=body.decision == "approve", reason=body.reason
        )
    except approvals.ApprovalRefused as exc:
        raise ApiError(403, str(exc), "approval_refused") from None
    except approvals.AlreadyDecided as exc:
        raise ApiError(409, str(exc), "already_decided") from None
    return {"id": call_id, "decision": approval.decision, "by": request.user.get_username()}
