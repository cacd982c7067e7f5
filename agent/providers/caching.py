"""Prompt caching on the wire: where the cache markers go, and what a refused marker means.

Anthropic (platform.claude.com/docs/en/build-with-claude/prompt-caching) caches a prompt prefix only
when asked: either one top-level ``cache_control`` ("automatic caching": the breakpoint goes on the
last cacheable block and moves forward as the conversation grows), or ``cache_control`` on up to
four blocks ("A maximum of 4 blocks with cache_control may be provided"). The prefix order is
tools, then system, then messages. Our breakpoints:

1. the last tool definition: tools are the most stable part and are shared by every conversation;
2. the last system block (``system`` becomes a block list: a string cannot carry the marker);
3. the last block of the last message: everything up to now is written for the next round;
4. the last block of the user message before the previous assistant turn: where round N-1 put its
   breakpoint 3. A tool round with many parallel calls adds more than the 20 blocks the cache looks
   back from a breakpoint, so without this one such a round would miss the cache it just wrote.

A marker is never put on a ``thinking``/``redacted_thinking`` block (the API answers "Extra inputs
are not permitted") nor on an empty text block ("cache_control cannot be set for empty text blocks").

OpenAI caches automatically; ``prompt_cache_key`` only routes one conversation's requests to the
same cache (developers.openai.com/api/docs/guides/prompt-caching).

Caching is an optimisation: a provider or proxy that refuses the markers (a 400 naming
``cache_control`` or ``prompt_cache_key``) gets the same request without them (``is_cache_refusal``).
"""

from __future__ import annotations

from typing import Any

from agent.providers.errors import BadRequest, ProviderError

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})
_CACHE_FIELDS = ("cache_control", "prompt_cache_key")


def _markable(block: dict[str, Any]) -> bool:
    if block.get("type") in _UNMARKABLE:
        return False
    return not (block.get("type") == "text" and not block.get("text"))


def _mark_last_block(message: dict[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return False
        message["content"] = content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return False
    for position in range(len(content) - 1, -1, -1):
        if _markable(content[position]):
            # A copy: replayed blocks are the stored round's own objects and stay untouched.
            content[position] = {**content[position], "cache_control": dict(EPHEMERAL)}
            return True
    return False


def mark_anthropic(body: dict[str, Any], mode: str) -> None:
    """Add the cache markers of ``mode`` ("breakpoints" / "automatic" / "off") to a Messages body."""
    if mode == "automatic":
        body["cache_control"] = dict(EPHEMERAL)
        return
    if mode != "breakpoints":
        return
    tools = body.get("tools")
    if tools:
        tools[-1] = {**tools[-1], "cache_control": dict(EPHEMERAL)}
    system = body.get("system")
    if isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": dict(EPHEMERAL)}]
    messages = body.get("messages") or []
    for message in reversed(messages):  # the last block that may carry a marker
        if _mark_last_block(message):
            break
    # The previous round's tail: the user message just before the last assistant message.
    if len(messages) >= 3 and messages[-2]["role"] == "assistant" and messages[-3]["role"] == "user":
        _mark_last_block(messages[-3])


def count_markers(body: dict[str, Any]) -> int:
    """Blocks carrying ``cache_control`` (the top-level automatic marker is not a block)."""
    blocks: list[Any] = list(body.get("tools") or [])
    if isinstance(body.get("system"), list):
        blocks += body["system"]
    for message in body.get("messages") or []:
        if isinstance(message.get("content"), list):
            blocks += message["content"]
    return sum(1 for b in blocks if isinstance(b, dict) and "cache_control" in b)


def is_cache_refusal(error: ProviderError) -> bool:
    """A 400 that names a caching field: the request is valid without it, so send it again without."""
    return isinstance(error, BadRequest) and any(f in error.message for f in _CACHE_FIELDS)
