"""Neutral request -> Anthropic Messages JSON body (providers.md §3). Pure functions.

* system and developer messages become the top-level ``system`` string;
* assistant tool calls become ``tool_use`` blocks with a parsed ``input`` object;
* tool messages become ``tool_result`` blocks (``is_error`` when set) in a user message, and all
  results answering one assistant message share that single user message, as the API requires;
* consecutive messages of one role are merged: the API wants user/assistant alternation;
* an assistant turn's ``thinking`` / ``redacted_thinking`` blocks go first, exactly as received
  (signature included): "echo the assistant message exactly as received" (docs/providers.md).
* prompt-cache breakpoints are added last, per the profile (``caching.mark_anthropic``).
"""

from __future__ import annotations

import json
from typing import Any

from agent.messages import Message, ToolSpec
from agent.providers.caching import mark_anthropic
from agent.providers.openai_chat_request import PROTECTED_FIELDS, output_limit, user_images
from agent.providers.profiles import Capabilities
from agent.providers.types import ModelRequest, ToolChoice


def _tool_input(arguments: str) -> dict[str, Any]:
    # The loop never replays a call whose arguments did not parse; still, never send a non-object.
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def tool_result_content(message: Message, media: frozenset[str]) -> str | list[dict[str, Any]]:
    """The text alone, or text + image blocks for the images the model takes (the text notes them).

    tool_result ``content`` is "a string or an array of content blocks" (text, image ...), images as
    ``{"type": "image", "source": {"type": "base64", "media_type", "data"}}``.
    """
    images = [m for m in message.media if m.kind == "image" and m.mime_type in media]
    if not images:
        return message.content or ""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.content or ""}]
    for image in images:
        source = {"type": "base64", "media_type": image.mime_type, "data": image.data}
        blocks.append({"type": "image", "source": source})
    return blocks


def _blocks(message: Message, caps: Capabilities) -> list[dict[str, Any]]:
    if message.role == "tool":
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": tool_result_content(message, caps.tool_result_media),
        }
        if message.is_error:
            block["is_error"] = True
        return [block]
    blocks: list[dict[str, Any]] = []
    if caps.replay_blocks:
        blocks.extend(dict(b.data) for b in message.replay if b.wire == "anthropic")
    for image in user_images(message, caps):
        # Images before the text, as Anthropic's vision guide recommends.
        source = {"type": "base64", "media_type": image.mime_type, "data": image.data}
        blocks.append({"type": "image", "source": source})
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": _tool_input(call.arguments)}
        )
    return blocks


def convert_messages(
    messages: tuple[Message, ...], caps: Capabilities
) -> tuple[str | None, list[dict[str, Any]]]:
    system = [m.content for m in messages if m.role in ("system", "developer") and m.content]
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role in ("system", "developer"):
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message, caps)
        if not blocks:
            continue  # the API rejects empty content
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    for entry in out:
        # A lone text block is sent as a plain string, the form the recordings show.
        if len(entry["content"]) == 1 and entry["content"][0]["type"] == "text":
            entry["content"] = entry["content"][0]["text"]
    return ("\n\n".join(system) or None), out


def convert_tool(tool: ToolSpec) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def convert_tool_choice(choice: ToolChoice | None, parallel: bool | None) -> dict[str, Any] | None:
    if isinstance(choice, dict):
        name = choice.get("name") or (choice.get("function") or {}).get("name")
        result: dict[str, Any] = {"type": "tool", "name": name}
    elif choice in ("auto", "none"):
        result = {"type": choice}
    elif choice == "required":
        result = {"type": "any"}
    elif parallel is False:
        result = {"type": "auto"}
    else:
        return None
    if parallel is False and result["type"] != "none":
        result["disable_parallel_tool_use"] = True
    return result


def build_payload(
    request: ModelRequest, caps: Capabilities, *, model: str, max_output: int | None
) -> dict[str, Any]:
    system, messages = convert_messages(request.messages, caps)
    body: dict[str, Any] = {
        "max_tokens": output_limit(request, max_output, caps.default_max_output_tokens) or 4096,
        "messages": messages,
        "model": model,
    }
    if system:
        body["system"] = system
    if request.tools:
        body["tools"] = [convert_tool(t) for t in request.tools]
        parallel = request.parallel_tool_calls if caps.send_parallel_tool_calls else None
        choice = convert_tool_choice(request.tool_choice if caps.send_tool_choice else None, parallel)
        if choice is not None:
            body["tool_choice"] = choice
    if request.temperature is not None and caps.send_temperature:
        body["temperature"] = request.temperature
    for key, value in request.extra.items():
        if key not in PROTECTED_FIELDS:
            body[key] = value
    mark_anthropic(body, caps.prompt_cache)
    if caps.stream:
        body["stream"] = True
    return body
