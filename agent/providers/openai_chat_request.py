"""Neutral request -> Chat Completions JSON body (providers.md §1.1, §7.7). Pure functions."""

from __future__ import annotations

from typing import Any

from agent.messages import Message, ToolSpec
from agent.providers.profiles import Capabilities
from agent.providers.types import ModelRequest, ToolChoice

# Fields a request's ``extra`` may not override: they are what the adapter is responsible for.
PROTECTED_FIELDS = frozenset({"model", "messages", "input", "system", "stream", "stream_options", "tools"})


def output_limit(request: ModelRequest, configured: int | None, default: int | None = None) -> int | None:
    """The tighter of what the loop asks for and the model's configured maximum."""
    limits = [v for v in (request.max_output_tokens, configured) if v is not None]
    return min(limits) if limits else default


def convert_message(message: Message, caps: Capabilities) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content or ""}
    if message.role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": message.content or None}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    # An empty string is what a no-argument tool streamed; the API wants JSON.
                    "function": {"name": call.name, "arguments": call.arguments or "{}"},
                }
                for call in message.tool_calls
            ]
        elif out["content"] is None:
            out["content"] = ""
        return out
    role = message.role
    if role == "developer" and not caps.developer_role:
        role = "system"
    return {"role": role, "content": message.content or ""}


def convert_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


def convert_tool_choice(choice: ToolChoice) -> str | dict[str, Any]:
    if isinstance(choice, str):
        return choice
    name = choice.get("name") or (choice.get("function") or {}).get("name")
    return {"type": "function", "function": {"name": name}} if name else dict(choice)


def build_payload(
    request: ModelRequest, caps: Capabilities, *, model: str, max_output: int | None
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": [convert_message(m, caps) for m in request.messages]}
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
    if request.n is not None and request.n != 1 and caps.send_n:
        body["n"] = request.n
    for key, value in request.extra.items():
        if key not in PROTECTED_FIELDS:
            body[key] = value
    body["stream"] = caps.stream
    if caps.stream and caps.send_stream_options:
        body["stream_options"] = {"include_usage": True}
    return body
