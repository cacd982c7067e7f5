"""Provider knobs: reasoning effort, thinking on/off, thinking budget, and the admin's extra body.

The admin sets neutral knobs; each preset declares which it supports (``Capabilities.knobs``) and
the wire shape they take (``Capabilities.knob_style``). ``body_fields`` maps them to the fields that
provider documents (sources in docs/providers.md, "Provider knobs"):

* openai / gemini / ollama: ``reasoning_effort``;
* openai_responses: ``reasoning: {effort}``;
* deepseek: ``thinking: {type: enabled|disabled}`` and ``reasoning_effort``;
* qwen (DashScope): ``enable_thinking`` and ``thinking_budget``;
* vllm: ``chat_template_kwargs: {enable_thinking}`` and ``reasoning_effort``;
* openrouter: ``reasoning: {effort | max_tokens, enabled}``;
* anthropic: ``thinking: {type: enabled, budget_tokens} | {type: adaptive} | {type: disabled}``
  and ``output_config: {effort}``.

The extra body is a JSON object merged last, key by key at the top level, into every request. It
may set anything except what the adapter is responsible for (``RESERVED_KEYS``): the model, the
messages / input / system prompt, the tools and streaming.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.providers.profiles import Capabilities

KNOBS = ("reasoning_effort", "thinking", "thinking_budget")
RESERVED_KEYS = frozenset({"model", "messages", "input", "system", "tools", "stream", "stream_options"})

# The effort values each wire accepts (anything else is refused before a request is sent).
EFFORTS: dict[str, tuple[str, ...]] = {
    "openai": ("none", "minimal", "low", "medium", "high", "xhigh"),
    "openai_responses": ("none", "minimal", "low", "medium", "high", "xhigh"),
    # DeepSeek maps minimal -> low, medium/xhigh -> high, ultra -> max (its thinking_mode guide).
    "deepseek": ("minimal", "low", "medium", "high", "xhigh", "max", "ultra"),
    "vllm": ("low", "medium", "high"),
    "openrouter": ("minimal", "low", "medium", "high", "xhigh"),
    "anthropic": ("low", "medium", "high", "xhigh", "max"),
}
# Anthropic: budget_tokens is at least 1,024 and strictly below max_tokens.
ANTHROPIC_MIN_BUDGET = 1024


class KnobError(ValueError):
    """A knob or extra body the preset cannot send; the message says why.

    ``code`` names the rule and ``params`` hold its values, so a host can say the same in its own
    language (the admin does, in chatapp/admin/engine_errors.py); the message stays the English one.
    """

    def __init__(self, message: str, code: str = "", **params: Any) -> None:
        super().__init__(message)
        self.code = code
        self.params = params


@dataclass(frozen=True, slots=True)
class Knobs:
    reasoning_effort: str | None = None
    thinking: bool | None = None  # None: the provider's default
    thinking_budget: int | None = None

    def chosen(self) -> list[str]:
        return [name for name in KNOBS if getattr(self, name) is not None]


def validate_knobs(knobs: Knobs, caps: Capabilities, preset: str = "") -> None:
    """Raise ``KnobError`` naming the first knob this preset cannot send as given."""
    name = preset or caps.knob_style or caps.kind
    unsupported = [k for k in knobs.chosen() if k not in caps.knobs]
    if unsupported:
        supported = ", ".join(k for k in KNOBS if k in caps.knobs) or "none"
        raise KnobError(
            f"preset {name!r} does not support {', '.join(unsupported)} (it supports: {supported})",
            "unsupported",
            preset=name,
            knobs=", ".join(unsupported),
            supported=", ".join(k for k in KNOBS if k in caps.knobs),
        )
    allowed = EFFORTS.get(caps.knob_style)
    if knobs.reasoning_effort is not None and allowed and knobs.reasoning_effort not in allowed:
        raise KnobError(
            f"reasoning effort {knobs.reasoning_effort!r} is not one of {', '.join(allowed)} for {name!r}",
            "effort",
            effort=knobs.reasoning_effort,
            allowed=", ".join(allowed),
            preset=name,
        )
    if knobs.thinking_budget is not None:
        if knobs.thinking is False:
            raise KnobError(
                "a thinking budget needs thinking on (or left at the provider's default)",
                "budget_needs_thinking",
            )
        if knobs.thinking_budget <= 0:
            raise KnobError("the thinking budget must be a positive number of tokens", "budget_positive")
        if caps.knob_style == "anthropic" and knobs.thinking_budget < ANTHROPIC_MIN_BUDGET:
            raise KnobError(
                f"Anthropic's thinking budget is at least {ANTHROPIC_MIN_BUDGET} tokens",
                "budget_minimum",
                minimum=ANTHROPIC_MIN_BUDGET,
            )


def _json_type(value: Any) -> str:
    for kind, name in (
        (bool, "a boolean"),
        (str, "a string"),
        ((int, float), "a number"),
        (list, "an array"),
    ):
        if isinstance(value, kind):
            return name
    return "null" if value is None else type(value).__name__


def validate_extra_body(value: Any) -> dict[str, Any]:
    """The extra body as a dict, or ``KnobError`` saying why it cannot be sent."""
    if not isinstance(value, dict):
        raise KnobError(
            f"the extra body must be a JSON object, not {_json_type(value)}",
            "extra_body_type",
            got=_json_type(value),
        )
    reserved = sorted(RESERVED_KEYS & set(value))
    if reserved:
        raise KnobError(
            f"the extra body may not set {', '.join(reserved)}: clearloop sends "
            f"{'that field' if len(reserved) == 1 else 'those fields'} itself",
            "extra_body_reserved",
            fields=", ".join(reserved),
            count=len(reserved),
        )
    return value


def body_fields(knobs: Knobs, caps: Capabilities, output_limit: int | None) -> dict[str, Any]:
    """The request fields for ``knobs`` in this preset's wire shape (only supported knobs)."""
    style = caps.knob_style
    effort, thinking, budget = knobs.reasoning_effort, knobs.thinking, knobs.thinking_budget
    if style == "anthropic":
        return _anthropic(effort, thinking, budget, output_limit)
    fields: dict[str, Any] = {}
    if style in ("openai", "deepseek", "vllm") and effort:
        fields["reasoning_effort"] = effort
    if style == "openai_responses" and effort:
        fields["reasoning"] = {"effort": effort}
    if style == "deepseek" and thinking is not None:
        fields["thinking"] = {"type": "enabled" if thinking else "disabled"}
    if style == "vllm" and thinking is not None:
        fields["chat_template_kwargs"] = {"enable_thinking": thinking}
    if style == "qwen":
        if thinking is not None or budget is not None:
            fields["enable_thinking"] = thinking is not False
        if budget is not None:
            fields["thinking_budget"] = budget
    if style == "openrouter":
        fields.update(_openrouter(effort, thinking, budget))
    return fields


def _openrouter(effort: str | None, thinking: bool | None, budget: int | None) -> dict[str, Any]:
    reasoning: dict[str, Any] = {}
    if budget is not None:  # "one of the following (not both)": a budget wins over an effort
        reasoning["max_tokens"] = budget
    elif effort:
        reasoning["effort"] = effort
    if thinking is not None:
        reasoning["enabled"] = thinking
    return {"reasoning": reasoning} if reasoning else {}


def _anthropic(
    effort: str | None, thinking: bool | None, budget: int | None, output_limit: int | None
) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if effort:
        fields["output_config"] = {"effort": effort}
    if thinking is False:
        fields["thinking"] = {"type": "disabled"}
    elif budget is not None:
        # budget_tokens must stay below max_tokens: a round squeezed by the context window lowers
        # it, and below the API's minimum it is left out (the model's default applies) rather than
        # sending a request the API rejects.
        if output_limit is not None:
            budget = min(budget, output_limit - 1)
        if budget >= ANTHROPIC_MIN_BUDGET:
            fields["thinking"] = {"type": "enabled", "budget_tokens": budget}
    elif thinking:
        fields["thinking"] = {"type": "adaptive"}
    return fields


def apply(
    body: dict[str, Any], knobs: Knobs, caps: Capabilities, extra_body: dict[str, Any]
) -> dict[str, Any]:
    """``body`` with the knob fields, then the extra body, merged in (reserved keys never change)."""
    limit = body.get(caps.output_limit_field)
    merged = {**body, **body_fields(knobs, caps, limit if isinstance(limit, int) else None)}
    for key, value in extra_body.items():
        if key not in RESERVED_KEYS:
            merged[key] = value
    return merged
