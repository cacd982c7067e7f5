"""Deterministic answers. The agent-loop issue teaches it the seeds' tool scenarios."""

from __future__ import annotations

import re
from typing import Any

from agent.demo_model.plan import Plan

_WORD = re.compile(r"\S+\s*|\s+")


def split_tokens(text: str) -> tuple[str, ...]:
    """Split text into word-sized pieces that concatenate back to exactly ``text``."""
    return tuple(_WORD.findall(text))


def last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return content or ""
    return ""


def plan_reply(body: dict[str, Any]) -> Plan:
    messages = body.get("messages") or []
    said = last_user_text(messages).strip()
    quoted = said if len(said) <= 200 else said[:200] + "…"
    text = (
        "Hello! I am the clearloop demo model, a scripted stand-in for a real LLM. "
        f"You said: “{quoted}”. "
        "I answer deterministically so that every step you see in the trace can be checked. "
        "Point clearloop at a real provider in the admin or with OPENAI_BASE_URL to chat with an LLM."
    )
    return Plan(text_pieces=split_tokens(text), finish_reason="stop")
