"""The OpenAI-compatible face of clearloop: model names, a request turned into a run, and the run's
events turned into ``chat.completion`` / ``chat.completion.chunk`` objects (docs/api.md).

A model name is a clearloop provider's name (its configured model) or ``provider/model`` for a model
the provider's admin allows. Each request starts a new conversation holding the request's messages
(or continues one named in the ``clearloop.conversation_id`` extension); the agent then runs with the
key owner's tools, policies and limits, exactly as from the browser.

Clearloop runs the tools itself, so no ``tool_calls`` delta ever reaches the client (a standard client
would try to execute them); what the tools do travels in the extension field ``clearloop`` of each
chunk, which standard clients ignore.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from chatapp.models import Conversation, Message, ProviderConfig, Run
from chatapp.redaction import redact_text
from chatapp.services.errors import ChatError
from chatapp.services.limits import check_model
from chatapp.services.providers import ensure_env_providers
from chatapp.services.run_events import StoredEvent
from chatapp.services.runs import check_message, start_run

EXTENSION = "clearloop"
# Events passed on in the extension field, and what of each (round payloads hold whole requests).
_ROUND_FIELDS = ("round_index", "model", "provider", "finish_reason", "usage", "ttft_ms", "duration_ms")


class BadCompletionRequest(ChatError):
    pass


@dataclass(frozen=True)
class Started:
    run: Run
    model_name: str
    created: int


def model_names() -> list[tuple[str, ProviderConfig]]:
    ensure_env_providers()
    names = []
    for provider in ProviderConfig.objects.filter(enabled=True).order_by("name"):
        names.append((provider.name, provider))
        for line in (provider.allowed_models or "").replace(",", "\n").splitlines():
            model = line.strip()
            if model and not any(c in model for c in "*?[") and model != provider.model:
                names.append((f"{provider.name}/{model}", provider))
    return names


def resolve_model(name: str) -> tuple[ProviderConfig, str]:
    provider_name, _, model = (name or "").partition("/")
    ensure_env_providers()
    provider = ProviderConfig.objects.filter(name=provider_name, enabled=True).first()
    if provider is None:
        known = ", ".join(n for n, _ in model_names()) or "none"
        raise BadCompletionRequest(f"The model {name[:120]!r} does not exist. Models: {known}.")
    return provider, check_model(provider, model)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: only text is taken
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if len(parts) != len(content):
            raise BadCompletionRequest("Only text content parts are accepted (no images or audio yet).")
        return "".join(parts)
    if content is None:
        return ""
    raise BadCompletionRequest("A message's content must be a string or a list of text parts.")


def split_messages(messages: list[dict[str, Any]]) -> tuple[list[tuple[str, str]], str]:
    """``(earlier messages, the last user message)``; tool messages are refused (clearloop runs tools)."""
    if not messages:
        raise BadCompletionRequest("messages must hold at least one message.")
    earlier: list[tuple[str, str]] = []
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "developer":
            role = "system"
        if role not in ("system", "user", "assistant"):
            raise BadCompletionRequest(
                f"messages[{index}].role is {role!r}; accepted: system, developer, user, assistant "
                "(clearloop runs tools itself, so there are no tool messages to send back)."
            )
        earlier.append((role, _text_of(message.get("content"))))
    role, last = earlier.pop()
    if role != "user":
        raise BadCompletionRequest("The last message must be the user's (role 'user').")
    return earlier, last


def start_completion(user: Any, body: dict[str, Any]) -> Started:
    """Check the request, store the conversation, start the run (the browser's path, start_run)."""
    provider, model = resolve_model(str(body.get("model") or ""))
    earlier, text = split_messages(body.get("messages") or [])
    raw_extension = body.get(EXTENSION)
    extension: dict[str, Any] = raw_extension if isinstance(raw_extension, dict) else {}
    conversation_id = extension.get("conversation_id")
    with transaction.atomic():
        if conversation_id is not None:
            conversation = Conversation.objects.filter(pk=conversation_id, owner=user).first()
            if conversation is None:
                raise BadCompletionRequest(f"No conversation {conversation_id!r} of yours.")
            earlier = []  # its history is stored already
        else:
            conversation = Conversation.objects.create(owner=user, title="API conversation")
        conversation.provider = provider
        conversation.model_override = model if model != provider.model else ""
        conversation.save(update_fields=["provider", "model_override", "updated_at"])
        for role, content in earlier:
            if content.strip():
                check_message(content)
                content = redact_text(content)
                Message.objects.create(
                    conversation=conversation,
                    role=role,
                    content=content,
                    payload={"role": role, "content": content},
                )
        run = start_run(conversation, text)
    name = provider.name if model == provider.model else f"{provider.name}/{model}"
    return Started(run=run, model_name=name, created=int(time.time()))


# --- events to OpenAI objects ----------------------------------------------------------------


def completion_id(run_id: int) -> str:
    return f"chatcmpl-clearloop-{run_id}"


def extension_event(event: StoredEvent) -> dict[str, Any] | None:
    """What a chunk carries about this event in ``clearloop``; None for events with nothing to add."""
    data = event.data
    if event.type == "delta":
        if data.get("reasoning"):
            return {"type": "reasoning", "seq": event.seq, "text": data["reasoning"]}
        return None
    if event.type == "round_finished":
        data = {k: data.get(k) for k in _ROUND_FIELDS}
        data["usage"] = {k: v for k, v in (data.get("usage") or {}).items() if k != "raw"}
    elif event.type == "run_finished":
        return None  # the final chunk says it
    return {"type": event.type, "seq": event.seq, "data": data}


def chunk(started: Started, *, delta: dict[str, Any], finish: str | None = None, ext: Any = None) -> dict:
    body: dict[str, Any] = {
        "id": completion_id(started.run.pk),
        "object": "chat.completion.chunk",
        "created": started.created,
        "model": started.model_name,
        "system_fingerprint": None,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if ext is not None:
        body[EXTENSION] = ext
    return body


def usage_of(run: Run) -> dict[str, int]:
    return {
        "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens,
        "total_tokens": run.prompt_tokens + run.completion_tokens,
    }


def finish_reason(run: Run) -> str:
    return "length" if run.status == Run.Status.SUCCEEDED and _partial(run) else "stop"


def _partial(run: Run) -> bool:
    return Message.objects.filter(run=run, role=Message.Role.ASSISTANT, partial=True).exists()


def run_extension(run: Run, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "run_id": run.pk,
        "conversation_id": run.conversation_id,
        "status": run.status,
    }
    if run.error:
        data["error"] = run.error
    if tool_calls is not None:
        data["tool_calls"] = tool_calls
    return data


def completion(started: Started, run: Run, tool_calls: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": completion_id(run.pk),
        "object": "chat.completion",
        "created": started.created,
        "model": started.model_name,
        "system_fingerprint": None,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": run.final_text, "refusal": None},
                "logprobs": None,
                "finish_reason": finish_reason(run),
            }
        ],
        "usage": usage_of(run),
        EXTENSION: run_extension(run, tool_calls),
    }


def tool_calls_of(run: Run) -> list[dict[str, Any]]:
    from chatapp.redaction import shown

    return [
        shown(
            {
                "call_id": c.call_id,
                "name": c.name,
                "server": c.server or None,
                "arguments": c.arguments,
                "status": c.status,
                "result": c.result,
                "is_error": c.is_error,
            }
        )
        for c in run.tool_calls.all()
    ]
