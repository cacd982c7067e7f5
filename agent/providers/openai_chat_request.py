"""Neutral request -> Chat Completions JSON body (providers.md §1.1, §7.7). Pure functions."""

from __future__ import annotations

from typing import Any

from agent.messages import Message, ToolCall, ToolSpec
from agent.providers import gemini_schema
from agent.providers.profiles import Capabilities
from agent.providers.types import ModelRequest, ToolChoice

# Fields a request's ``extra`` may not override: they are what the adapter is responsible for.
PROTECTED_FIELDS = frozenset({"model", "messages", "input", "system", "stream", "stream_options", "tools"})


def output_limit(request: ModelRequest, configured: int | None, default: int | None = None) -> int | None:
    """The tighter of what the loop asks for and the model's configured maximum."""
    limits = [v for v in (request.max_output_tokens, configured) if v is not None]
    return min(limits) if limits else default


_DETAILS = "reasoning_details"


def tool_turn_assistants(messages: tuple[Message, ...] | list[Message]) -> frozenset[int]:
    """Positions of the assistant messages in a user turn (the messages between two user messages)
    in which the model called a tool: the ones whose reasoning DeepSeek requires back.

    DeepSeek's rule (docs/providers.md): "between two user messages, if the model performed a tool
    call, the intermediate assistant's reasoning_content must participate in the context
    concatenation" in all later requests; in a turn without tool calls it is ignored, so not sent.
    """
    found: set[int] = set()
    turn: list[int] = []
    called = False
    for position, message in enumerate(messages):
        if message.role == "user":
            if called:
                found.update(turn)
            turn, called = [], False
        elif message.role == "assistant":
            turn.append(position)
            called = called or bool(message.tool_calls)
    if called:
        found.update(turn)
    return frozenset(found)


def _tool_call(call: ToolCall, caps: Capabilities, *, first: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": call.id,
        "type": "function",
        # An empty string is what a no-argument tool streamed; the API wants JSON.
        "function": {"name": call.name, "arguments": call.arguments or "{}"},
    }
    if caps.echo_tool_call_extra and call.provider_extra:
        # Gemini: extra_content.google.thought_signature, echoed exactly as it came.
        for key, value in call.provider_extra.items():
            out.setdefault(key, value)
    elif caps.echo_tool_call_extra and first and caps.unsigned_call_signature:
        # No signature was kept for this step (stored before they were): Gemini's documented
        # stand-in lets the run go on instead of a 400 on every later request.
        out["extra_content"] = {"google": {"thought_signature": caps.unsigned_call_signature}}
    return out


def convert_message(
    message: Message, caps: Capabilities, *, replay_reasoning: bool = False
) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content or ""}
    if message.role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": message.content or None}
        if message.tool_calls:
            out["tool_calls"] = [_tool_call(c, caps, first=not i) for i, c in enumerate(message.tool_calls)]
        elif out["content"] is None:
            out["content"] = ""
        if replay_reasoning and caps.reasoning_replay != "none":
            out[caps.reasoning_replay] = message.reasoning or ""
        if caps.replay_blocks:
            details = [b.data for b in message.replay if b.wire == "openai_chat" and b.type == _DETAILS]
            if details:
                out["reasoning_details"] = details
        return out
    role = message.role
    if role == "developer" and not caps.developer_role:
        role = "system"
    images = user_images(message, caps)
    if images:
        # Chat Completions vision: content parts, the image as a base64 data URL in image_url.url.
        parts: list[dict[str, Any]] = [{"type": "text", "text": message.content or ""}]
        for image in images:
            parts.append(
                {"type": "image_url", "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"}}
            )
        return {"role": role, "content": parts}
    return {"role": role, "content": message.content or ""}


def user_images(message: Message, caps: Capabilities) -> list[Any]:
    """The images of a user message the model reads (its capabilities say which types)."""
    if message.role != "user":
        return []
    return [m for m in message.media if m.kind == "image" and m.mime_type in caps.user_image_media]


def convert_tool(tool: ToolSpec, caps: Capabilities | None = None) -> dict[str, Any]:
    parameters = tool.parameters
    if caps is not None and caps.schema_dialect == "gemini":
        parameters = gemini_schema.sanitise(parameters)
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": parameters},
    }


def convert_tool_choice(choice: ToolChoice) -> str | dict[str, Any]:
    if isinstance(choice, str):
        return choice
    name = choice.get("name") or (choice.get("function") or {}).get("name")
    return {"type": "function", "function": {"name": name}} if name else dict(choice)


def build_payload(
    request: ModelRequest, caps: Capabilities, *, model: str, max_output: int | None
) -> dict[str, Any]:
    replay = tool_turn_assistants(request.messages) if caps.reasoning_replay != "none" else frozenset()
    messages = [
        convert_message(m, caps, replay_reasoning=i in replay) for i, m in enumerate(request.messages)
    ]
    body: dict[str, Any] = {"model": model, "messages": messages}
    if request.tools:
        body["tools"] = [convert_tool(t, caps) for t in request.tools]
        if request.tool_choice is not None and caps.send_tool_choice:
            body["tool_choice"] = convert_tool_choice(request.tool_choice)
        if request.parallel_tool_calls is not None and caps.send_parallel_tool_calls:
            body["parallel_tool_calls"] = request.parallel_tool_calls
    limit = output_limit(request, max_output, caps.default_max_output_tokens)
    if limit is not None:
        body[caps.output_limit_field] = limit
    if request.temperature is not None and caps.send_temperature:
        body["temperature"] = request.temperature
    if request.n is not None and request.n != 1 and caps.send_n:
        body["n"] = request.n
    if request.cache_key and caps.send_prompt_cache_key:
        body["prompt_cache_key"] = request.cache_key
    for key, value in request.extra.items():
        if key not in PROTECTED_FIELDS:
            body[key] = value
    body["stream"] = caps.stream
    if caps.stream and caps.send_stream_options:
        body["stream_options"] = {"include_usage": True}
    return body
