"""The exact chunk shapes of OpenAI Chat Completions streaming (providers.md §1.3)."""

from __future__ import annotations

import json
from typing import Any

from demo.model.plan import Plan


def count_tokens(text: str) -> int:
    # The demo model counts a word-sized piece as a token; it only has to be consistent.
    return max(1, len(text.split())) if text else 0


def prompt_tokens(body: dict[str, Any]) -> int:
    messages = json.dumps(body.get("messages", []), ensure_ascii=False)
    tools = json.dumps(body.get("tools", []), ensure_ascii=False)
    return count_tokens(messages) + count_tokens(tools)


class ChunkWriter:
    def __init__(self, completion_id: str, model: str, created: int) -> None:
        self.base = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
        }

    def chunk(
        self, delta: dict[str, Any], finish_reason: str | None = None, index: int = 0
    ) -> dict[str, Any]:
        choice = {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {**self.base, "choices": [choice], "usage": None}

    def usage(self, usage: dict[str, int]) -> dict[str, Any]:
        return {**self.base, "choices": [], "usage": usage}


def arguments_text(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def tool_call_payload(plan: Plan, ids: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "id": call_id,
            "type": "function",
            "function": {"name": c.name, "arguments": arguments_text(c.arguments)},
        }
        for call_id, c in zip(ids, plan.tool_calls, strict=True)
    ]


def usage_dict(body: dict[str, Any], plan: Plan) -> dict[str, int]:
    prompt = prompt_tokens(body)
    completion = 0
    for choice in (plan, *plan.extra_choices):
        completion += sum(count_tokens(p) for p in choice.text_pieces)
        completion += sum(count_tokens(arguments_text(c.arguments)) for c in choice.tool_calls)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def encode(data: dict[str, Any] | str) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"data: {payload}\n\n".encode()
