"""Neutral request -> OpenAI Responses JSON body (providers.md §2). Pure functions.

The history is replayed statelessly as input items (no ``previous_response_id``): messages keep
their role (``developer`` falls back to ``system`` where a profile says so), an assistant's tool
calls become ``function_call`` items with the real ``call_...`` id, tool results become
``function_call_output`` items. Tools are flat (no nested ``function`` object).

Reasoning (docs/providers.md): with ``store: false`` (our default) nothing is kept at OpenAI, so the
reasoning items are requested with ``include: ["reasoning.encrypted_content"]`` and sent back, whole
and first, with the assistant turn that holds the ``function_call`` they led to ("you must include
all reasoning items between the function call and the last user message"). An item without
``encrypted_content`` only refers to stored state and is replayed only when storage is on.
Function tools say ``strict`` explicitly: left out, the API treats them as strict and rewrites
optional parameters as required.
"""

from __future__ import annotations

from typing import Any

from agent.messages import Message, ToolSpec
from agent.providers.openai_chat_request import PROTECTED_FIELDS, output_limit, user_images
from agent.providers.profiles import Capabilities
from agent.providers.types import ModelRequest, ToolChoice
from agent.replay import ReplayBlock


def function_output(message: Message, caps: Capabilities) -> str | list[dict[str, Any]]:
    """The text alone, or ``input_text`` + ``input_image`` parts for the images the model takes.

    ``function_call_output.output`` is a string or a list of ``input_text`` / ``input_image`` /
    ``input_file`` parts; an image goes as a base64 data URL.
    """
    images = [m for m in message.media if m.kind == "image" and m.mime_type in caps.tool_result_media]
    if not images:
        return message.content or ""
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": message.content or ""}]
    for image in images:
        url = f"data:{image.mime_type};base64,{image.data}"
        parts.append({"type": "input_image", "image_url": url, "detail": "auto"})
    return parts


def convert_message(message: Message, caps: Capabilities) -> list[dict[str, Any]]:
    if message.role == "tool":
        output = function_output(message, caps)
        return [{"type": "function_call_output", "call_id": message.tool_call_id, "output": output}]
    if message.role == "assistant":
        items: list[dict[str, Any]] = [dict(b.data) for b in message.replay if _replayable(b, caps)]
        if message.content:
            items.append({"role": "assistant", "content": message.content})
        for call in message.tool_calls:
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments or "{}",
                }
            )
        return items
    role = message.role
    if role == "developer" and not caps.developer_role:
        role = "system"
    images = user_images(message, caps)
    if images:
        parts: list[dict[str, Any]] = [{"type": "input_text", "text": message.content or ""}]
        for image in images:
            url = f"data:{image.mime_type};base64,{image.data}"
            parts.append({"type": "input_image", "image_url": url, "detail": "auto"})
        return [{"role": role, "content": parts}]
    return [{"role": role, "content": message.content or ""}]


def _replayable(block: ReplayBlock, caps: Capabilities) -> bool:
    if not caps.replay_blocks or block.wire != "openai_responses" or block.type != "reasoning":
        return False
    return bool(block.data.get("encrypted_content")) or caps.responses_store


def convert_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
        # Our tools' schemas are not written for strict mode (optional fields, open objects).
        "strict": False,
    }


def convert_tool_choice(choice: ToolChoice) -> str | dict[str, Any]:
    if isinstance(choice, str):
        return choice
    name = choice.get("name") or (choice.get("function") or {}).get("name")
    return {"type": "function", "name": name} if name else dict(choice)


def build_payload(
    request: ModelRequest, caps: Capabilities, *, model: str, max_output: int | None
) -> dict[str, Any]:
    items = [item for message in request.messages for item in convert_message(message, caps)]
    body: dict[str, Any] = {"model": model, "input": items, "store": caps.responses_store}
    if caps.responses_encrypted_reasoning:
        body["include"] = ["reasoning.encrypted_content"]
    if request.tools:
        body["tools"] = [convert_tool(t) for t in request.tools]
        if request.tool_choice is not None and caps.send_tool_choice:
            body["tool_choice"] = convert_tool_choice(request.tool_choice)
        if request.parallel_tool_calls is not None and caps.send_parallel_tool_calls:
            body["parallel_tool_calls"] = request.parallel_tool_calls
    limit = output_limit(request, max_output, caps.default_max_output_tokens)
    if limit is not None:
        body[caps.output_limit_field] = limit
    if request.temperature is not None and caps.send_temperature:
        body["temperature"] = request.temperature
    if request.cache_key and caps.send_prompt_cache_key:
        body["prompt_cache_key"] = request.cache_key
    for key, value in request.extra.items():
        if key not in PROTECTED_FIELDS:
            body[key] = value
    body["stream"] = caps.stream
    return body
