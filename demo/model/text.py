"""Text replies of the demo model."""

from __future__ import annotations

import re

from demo.model.history import Turn
from demo.model.plan import Plan

_WORD = re.compile(r"\S+\s*|\s+")


def split_tokens(text: str) -> tuple[str, ...]:
    """Split text into word-sized pieces that concatenate back to exactly ``text``."""
    return tuple(_WORD.findall(text))


def say(turn: Turn, chinese: str, english: str, finish: str = "stop") -> Plan:
    return Plan(text_pieces=split_tokens(chinese if turn.cjk else english), finish_reason=finish)


def echo(turn: Turn) -> Plan:
    said = turn.user_text.strip()
    quoted = said if len(said) <= 200 else said[:200] + "…"
    text = (
        "Hello! I am the clearloop demo model, a scripted stand-in for a real LLM. "
        f"You said: “{quoted}”. "
        + (
            f"I received {len(turn.images)} image(s): {', '.join(turn.images)} (I cannot see them). "
            if turn.images
            else ""
        )
        + "I answer deterministically so that every step you see in the trace can be checked. "
        "Point clearloop at a real provider in the admin or with OPENAI_BASE_URL to chat with an LLM."
    )
    return Plan(text_pieces=split_tokens(text), finish_reason="stop")
