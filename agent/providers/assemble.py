"""Shared, sans-I/O pieces of assembly: the per-choice builder and tool-call finalisation.

Every adapter accumulates into ``PendingChoice`` / ``PendingCall`` while the stream runs and calls
``finalize_choice`` once it has ended (R-PROV-2: parse and validate only after the end). That is
where providers.md §7.5 lives: arguments are parsed once, a call cut off by an output limit is
marked ``truncated`` (never to be executed), and a call without an id gets a deterministic one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from agent.providers import finish
from agent.providers.types import AssembledToolCall, ChoiceResult, FinishReason, Usage
from agent.replay import ReplayBlock


@dataclass(slots=True)
class PendingCall:
    id: str | None = None
    name: str | None = None
    parts: list[str] = field(default_factory=list)
    # True once the wire said the arguments are complete (Anthropic content_block_stop, Responses
    # ...arguments.done); None where the wire has no such signal (Chat Completions).
    complete: bool | None = None
    # Authoritative full arguments when the wire repeats them at the end (Responses).
    final_arguments: str | None = None
    # Wire fields to echo back with this call (Gemini's ``extra_content``), as received.
    provider_extra: dict[str, Any] | None = None

    @property
    def arguments(self) -> str:
        return self.final_arguments if self.final_arguments is not None else "".join(self.parts)


@dataclass(slots=True)
class PendingChoice:
    index: int
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    calls: dict[int, PendingCall] = field(default_factory=dict)
    finish_raw: str | None = None
    # Opaque blocks to replay (agent/replay.py), in the order the wire gave them.
    replay: list[ReplayBlock] = field(default_factory=list)


def deterministic_call_id(response_id: str | None, choice: int, index: int, name: str) -> str:
    """An id for servers that send none (Gemini 2.x, some local servers): stable across replays."""
    seed = f"{response_id or ''}:{choice}:{index}:{name}".encode()
    return "call_" + hashlib.sha256(seed).hexdigest()[:24]


def looks_incomplete(text: str) -> bool:
    """True when ``text`` is a prefix of JSON that stopped early: an open string or bracket.

    Told apart from JSON that is simply wrong (``{"a": b}``), because the loop answers the two
    differently: "use smaller pieces" versus "fix the arguments" (R-LOOP-3, R-LOOP-5).
    """
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
    return in_string or depth > 0


def _parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"arguments are not valid JSON: {exc.msg} at position {exc.pos}"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


def finalize_call(
    call: PendingCall, *, response_id: str | None, choice: int, index: int, finish_reason: FinishReason
) -> AssembledToolCall:
    name = call.name or ""
    call_id = call.id or deterministic_call_id(response_id, choice, index, name)
    raw = call.arguments
    extra = call.provider_extra or None
    cut_by_limit = finish_reason == "length" and call.complete is not True
    if not raw.strip():
        # Empty arguments mean a tool without parameters (Anthropic's partial_json:"", vLLM's missing
        # key), unless the output limit struck before the arguments could start.
        if cut_by_limit:
            cut = "arguments cut off by the output limit"
            return AssembledToolCall(call_id, name, raw, None, cut, True, provider_extra=extra)
        return AssembledToolCall(call_id, name, raw, {}, provider_extra=extra)
    arguments, error = _parse_arguments(raw)
    if error is None:
        return AssembledToolCall(call_id, name, raw, arguments, provider_extra=extra)
    truncated = finish_reason == "length" or looks_incomplete(raw)
    return AssembledToolCall(call_id, name, raw, None, error, truncated, provider_extra=extra)


def finalize_choice(
    pending: PendingChoice,
    *,
    response_id: str | None,
    finish_reason: FinishReason | None = None,
    finish_raw: str | None = None,
) -> ChoiceResult:
    """Build the choice. ``finish_reason`` given by the caller (Responses) or derived from the raw."""
    raw = finish_raw if finish_raw is not None else pending.finish_raw
    text = "".join(pending.text)
    refusal = "".join(pending.refusal) or None
    has_calls = bool(pending.calls)
    if finish_reason is None:
        finish_reason = finish.normalize(
            raw, has_tool_calls=has_calls, refusal_only=bool(refusal) and not text and not has_calls
        )
    calls = tuple(
        finalize_call(
            pending.calls[i],
            response_id=response_id,
            choice=pending.index,
            index=n,
            finish_reason=finish_reason,
        )
        for n, i in enumerate(sorted(pending.calls))
    )
    if any(c.truncated for c in calls):
        # vLLM labels a length stop "tool_calls" (providers.md §1.5 b): the label must not hide it.
        finish_reason = "length"
    return ChoiceResult(
        index=pending.index,
        text=text,
        reasoning="".join(pending.reasoning),
        tool_calls=calls,
        finish_reason=finish_reason,
        finish_reason_raw=raw,
        refusal=refusal,
        replay=tuple(pending.replay),
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _dig(data: dict[str, Any], outer: str, inner: str) -> int | None:
    nested = data.get(outer)
    return _int(nested.get(inner)) if isinstance(nested, dict) else None


def usage_from_openai(data: dict[str, Any]) -> Usage:
    """Chat Completions usage, with DeepSeek's ``prompt_cache_hit_tokens`` as the cached count."""
    cached = _dig(data, "prompt_tokens_details", "cached_tokens")
    if cached is None:
        cached = _int(data.get("prompt_cache_hit_tokens"))
    return Usage(
        prompt_tokens=_int(data.get("prompt_tokens")),
        completion_tokens=_int(data.get("completion_tokens")),
        total_tokens=_int(data.get("total_tokens")),
        cached_tokens=cached,
        reasoning_tokens=_dig(data, "completion_tokens_details", "reasoning_tokens"),
        cache_write_tokens=_dig(data, "prompt_tokens_details", "cache_write_tokens"),
        raw=data,
    )


def usage_from_responses(data: dict[str, Any]) -> Usage:
    return Usage(
        prompt_tokens=_int(data.get("input_tokens")),
        completion_tokens=_int(data.get("output_tokens")),
        total_tokens=_int(data.get("total_tokens")),
        cached_tokens=_dig(data, "input_tokens_details", "cached_tokens"),
        reasoning_tokens=_dig(data, "output_tokens_details", "reasoning_tokens"),
        cache_write_tokens=_dig(data, "input_tokens_details", "cache_write_tokens"),
        raw=data,
    )


def usage_from_anthropic(data: dict[str, Any]) -> Usage:
    """Anthropic counts cache reads and writes outside ``input_tokens``: the prompt is their sum."""
    parts = [
        _int(data.get(k)) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    prompt = sum(p for p in parts if p is not None) if any(p is not None for p in parts) else None
    completion = _int(data.get("output_tokens"))
    total = prompt + completion if prompt is not None and completion is not None else None
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=total,
        cached_tokens=_int(data.get("cache_read_input_tokens")),
        reasoning_tokens=None,
        cache_write_tokens=_int(data.get("cache_creation_input_tokens")),
        raw=data,
    )
