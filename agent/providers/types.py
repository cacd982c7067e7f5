"""Values that cross the provider interface: the request, the stream events, the assembled response.

Events form a closed union (``ModelEvent``). Every adapter emits, for one request, any number of
deltas, then ``Finish`` per choice and ``UsageReport`` when the provider reports usage, and always
ends with exactly one ``ResponseDone`` carrying the assembled response.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from agent.messages import Message, ToolSpec
from agent.replay import ReplayBlock

FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "other"]
ToolChoice = Literal["auto", "none", "required"] | dict[str, Any]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    n: int | None = None
    parallel_tool_calls: bool | None = None
    # Names the prompt cache this request belongs to (one per conversation); sent as OpenAI's
    # ``prompt_cache_key`` where the profile takes it.
    cache_key: str | None = None
    # Free-form per-request fields passed through verbatim (after capability filtering).
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    # Prompt tokens read from the provider's prompt cache (part of ``prompt_tokens``).
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    # Prompt tokens written to the provider's prompt cache (part of ``prompt_tokens``; billed above
    # the base input price by Anthropic: Anthropic ``cache_creation_input_tokens``, OpenRouter and
    # Azure ``*_tokens_details.cache_write_tokens``).
    cache_write_tokens: int | None = None
    raw: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "cached_tokens": self.cached_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "raw": self.raw,
        }


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str
    choice: int = 0


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str
    choice: int = 0


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    choice: int
    index: int
    id: str | None
    name: str | None
    arguments: str


@dataclass(frozen=True, slots=True)
class Finish:
    reason: FinishReason
    raw: str | None
    choice: int = 0


@dataclass(frozen=True, slots=True)
class UsageReport:
    usage: Usage


@dataclass(frozen=True, slots=True)
class AssembledToolCall:
    id: str
    name: str
    arguments_raw: str
    arguments: dict[str, Any] | None
    parse_error: str | None = None
    # Arguments cut off by an output limit: the loop must never execute such a call (R-LOOP-3).
    truncated: bool = False
    # Fields of the wire's tool call to echo back verbatim (Gemini's ``extra_content``).
    provider_extra: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {
            "id": self.id,
            "name": self.name,
            "arguments_raw": self.arguments_raw,
            "arguments": self.arguments,
            "parse_error": self.parse_error,
            "truncated": self.truncated,
        }
        if self.provider_extra:
            data["provider_extra"] = self.provider_extra
        return data


@dataclass(frozen=True, slots=True)
class ChoiceResult:
    index: int
    text: str
    reasoning: str
    tool_calls: tuple[AssembledToolCall, ...]
    finish_reason: FinishReason
    finish_reason_raw: str | None
    refusal: str | None = None
    # Opaque parts of the turn the provider requires back verbatim (agent/replay.py).
    replay: tuple[ReplayBlock, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = {
            "index": self.index,
            "text": self.text,
            "reasoning": self.reasoning,
            "tool_calls": [c.to_dict() for c in self.tool_calls],
            "finish_reason": self.finish_reason,
            "finish_reason_raw": self.finish_reason_raw,
            "refusal": self.refusal,
        }
        if self.replay:
            data["replay"] = [b.to_dict() for b in self.replay]
        return data


@dataclass(frozen=True, slots=True)
class AssembledResponse:
    """The whole response. ``choices[0]`` is the one the loop uses (R-MSG-3)."""

    choices: tuple[ChoiceResult, ...]
    usage: Usage
    response_id: str | None = None
    model: str | None = None

    @property
    def primary(self) -> ChoiceResult:
        return self.choices[0]

    @property
    def text(self) -> str:
        return self.primary.text

    @property
    def tool_calls(self) -> tuple[AssembledToolCall, ...]:
        return self.primary.tool_calls

    @property
    def finish_reason(self) -> FinishReason:
        return self.primary.finish_reason

    @property
    def finish_reason_raw(self) -> str | None:
        return self.primary.finish_reason_raw

    @property
    def choice_count(self) -> int:
        return len(self.choices)

    def to_dict(self) -> dict[str, Any]:
        return {
            "choices": [c.to_dict() for c in self.choices],
            "usage": self.usage.to_dict(),
            "response_id": self.response_id,
            "model": self.model,
        }


@dataclass(frozen=True, slots=True)
class ResponseDone:
    response: AssembledResponse


ModelEvent = TextDelta | ReasoningDelta | ToolCallDelta | Finish | UsageReport | ResponseDone
