"""finish_reason normalisation (providers.md §5, R-PROV-3), in one place for every adapter.

Target set: stop | tool_calls | length | content_filter | other. The raw value always travels with
the normalised one. Three cross-cutting rules (§5):

1. tool calls present with ``stop``/missing finish mean ``tool_calls``;
2. a ``tool_calls`` label must not hide truncation: see ``toolcalls.finalize_choice``;
3. unknown values become ``other``, never ``stop`` (``insufficient_system_resource``,
   ``pause_turn``, Gemini ``MALFORMED_FUNCTION_CALL`` are not success).
"""

from __future__ import annotations

from agent.providers.types import FinishReason

_TABLE: dict[str, FinishReason] = {}


def _register(reason: FinishReason, *raws: str) -> None:
    for raw in raws:
        _TABLE[raw.lower()] = reason


_register("stop", "stop", "end_turn", "stop_sequence", "eos", "eos_token", "complete", "completed")
_register("tool_calls", "tool_calls", "function_call", "tool_use")
_register(
    "length",
    "length",
    "max_tokens",
    "max_output_tokens",
    "model_context_window_exceeded",
    "continuation",
)
_register(
    "content_filter",
    "content_filter",
    "refusal",
    "safety",
    "recitation",
    "blocklist",
    "prohibited_content",
    "spii",
    "language",
    "image_safety",
    "image_prohibited_content",
    "image_recitation",
    "image_other",
    "no_image",
    "escalation",
    "pup_limited_disabled",
    "model_armor",
    "guardrail_intervened",
    "content_filtered",
    "error_toxic",
    "sensitive",
)


def normalize(
    raw: str | int | None, *, has_tool_calls: bool = False, refusal_only: bool = False
) -> FinishReason:
    """Map a provider's raw finish value to the neutral set.

    ``refusal_only``: the choice carries a refusal and neither content nor tool calls (OpenAI
    structured outputs report that with ``finish_reason: stop``).
    """
    reason: FinishReason = "other" if raw is None else _TABLE.get(str(raw).lower(), "other")
    if has_tool_calls and (raw is None or reason == "stop"):
        return "tool_calls"
    if refusal_only and reason in ("stop", "other"):
        return "content_filter"
    return reason


# Raw values meaning "input plus output filled the context window" (Anthropic's stop reason; its docs:
# "Treat the response as truncated"). Normalised to ``length``, but the follow-up must make room by
# compressing the context: a plain continuation would send an even longer prompt.
_CONTEXT_FULL = frozenset({"model_context_window_exceeded"})


def context_full(raw: str | int | None) -> bool:
    return raw is not None and str(raw).lower() in _CONTEXT_FULL


def responses_raw(status: str | None, incomplete_reason: str | None) -> str | None:
    """The raw value recorded for a Responses result, which has no finish_reason of its own."""
    if status == "incomplete":
        return f"incomplete:{incomplete_reason}" if incomplete_reason else "incomplete"
    return status


def normalize_responses(
    status: str | None, incomplete_reason: str | None, *, has_tool_calls: bool
) -> FinishReason:
    if status == "completed":
        return "tool_calls" if has_tool_calls else "stop"
    if status == "incomplete":
        # The openapi example says "max_tokens" where the schema says "max_output_tokens": take both.
        if incomplete_reason in ("max_output_tokens", "max_tokens"):
            return "length"
        if incomplete_reason == "content_filter":
            return "content_filter"
    return "other"
