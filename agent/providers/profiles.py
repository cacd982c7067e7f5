"""Capability profiles: which optional fields a provider and model accept (R-PROV-4, R-PROV-5).

A request builder sends an optional field only when the request sets it *and* the profile says the
provider takes it; everything else is left out rather than risk a 400 (llama.cpp rejects ``n>1``,
OpenAI reasoning models reject ``max_tokens`` and ``temperature``) or a silent misreading (Ollama
drops ``tool_choice``). Sources per row: providers.md §1.5 and §7.7.

Selection: ``resolve(preset, model, overrides)``: the preset's profile, then the first of its model
rules whose pattern matches the model name, then the admin's overrides.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass, field
from typing import Any, Literal, get_args, get_origin, get_type_hints

OutputLimitField = Literal["max_completion_tokens", "max_tokens", "max_output_tokens"]
# Where a Chat Completions provider wants an assistant turn's reasoning text back (docs/providers.md).
ReasoningReplay = Literal["none", "reasoning_content", "reasoning"]
SchemaDialect = Literal["json_schema", "gemini"]
# Anthropic prompt caching: "breakpoints" marks the last tool, the system block and the last message
# block; "automatic" sends the one top-level ``cache_control``; "off" sends neither.
PromptCache = Literal["off", "breakpoints", "automatic"]


@dataclass(frozen=True, slots=True)
class Capabilities:
    kind: str
    output_limit_field: OutputLimitField = "max_tokens"
    send_n: bool = False
    send_tool_choice: bool = True
    send_parallel_tool_calls: bool = False
    send_temperature: bool = True
    # stream_options.include_usage; only ever sent with stream=True.
    send_stream_options: bool = True
    stream: bool = True
    # Without it, developer messages go out as system messages.
    developer_role: bool = False
    # The output limit when the admin sets none. Thinking counts against it on every provider that
    # thinks, so it is sized for a thinking model (see docs/providers.md, "Provider knobs").
    default_max_output_tokens: int | None = None
    # Which provider knobs (knobs.KNOBS) the preset maps, and to which wire shape (knobs.STYLES).
    knobs: frozenset[str] = frozenset()
    knob_style: str = ""
    # Seconds without a byte before a stream counts as stalled. Reasoning models can stay silent for
    # minutes before their first byte (providers.md review §4), so hosted presets wait long.
    default_idle_timeout: float = 300.0
    default_total_timeout: float = 1800.0
    # The window the server runs with when it does not say (Ollama's documented 4k default), and
    # how to ask it ("ollama": /api/ps, /api/show; see ollama.py). The admin's window is a maximum.
    default_context_window: int | None = None
    context_probe: str = ""
    # --- reasoning replay in tool loops (agent/replay.py, docs/providers.md "Reasoning replay") ---
    # Chat: the field that carries an assistant turn's reasoning text back, on every assistant
    # message of a user turn in which the model called a tool (DeepSeek: reasoning_content).
    reasoning_replay: ReasoningReplay = "none"
    # Send back the opaque blocks this wire produced (Anthropic thinking / redacted_thinking,
    # Responses reasoning items, OpenRouter reasoning_details), verbatim.
    replay_blocks: bool = False
    # Chat: echo each tool call's provider fields (Gemini's extra_content.google.thought_signature).
    echo_tool_call_extra: bool = False
    # Chat: the signature to send on a step's first call when none was captured (a round stored
    # before signatures were kept): Gemini documents a validator-skipping value for such history.
    unsigned_call_signature: str = ""
    # Responses: store the response at the provider (the API's own default is true; ours is not),
    # and ask for reasoning.encrypted_content so the reasoning can be replayed without storage.
    responses_store: bool = False
    responses_encrypted_reasoning: bool = False
    # Anthropic preserved thinking: a thinking block is valid only if nothing before it changed,
    # so context compression may drop whole earlier turns but never rewrite inside the run.
    prefix_locked_thinking: bool = False
    # Tool parameter schemas: "gemini" removes what the Gemini OpenAI-compatible endpoint rejects.
    schema_dialect: SchemaDialect = "json_schema"
    prompt_cache: PromptCache = "off"
    # OpenAI ``prompt_cache_key``: routes requests of one conversation to the same prompt cache.
    send_prompt_cache_key: bool = False
    # Tokens per CJK character of the provider's tokenizer, where documented or measured
    # (tokens.TokenCounter.cjk_per_char); None = count CJK with cl100k like everything else.
    cjk_tokens_per_char: float | None = None
    # A free pre-flight token count (Anthropic ``POST /v1/messages/count_tokens``): asked only while a
    # model's tokenizer ratio is still unknown (a deployment's first run on it), see model_round.
    count_tokens_endpoint: bool = False
    # Image types the API takes inside a tool result (Anthropic tool_result image blocks, Responses
    # function_call_output input_image). Others, and every type on Chat Completions (tool messages are
    # text only), reach the model as the text note "[image: image/png, 12 KB]".
    tool_result_media: frozenset[str] = frozenset()
    # Image types the model reads in a *user* message (vision): OpenAI image_url data URL, Responses
    # input_image, Anthropic image block. Empty = a text-only model: an image attachment is refused
    # with the reason. An admin override turns it on for a vision model behind another preset.
    user_image_media: frozenset[str] = frozenset()
    # Longest image edge sent (px); larger attachments are scaled down first (docs/conversations.md).
    image_max_edge: int = 2048


@dataclass(frozen=True, slots=True)
class Preset:
    base: Capabilities
    # (regex on the model name, field overrides); the first match applies.
    model_rules: tuple[tuple[str, dict[str, Any]], ...] = field(default_factory=tuple)


# OpenAI's reasoning models (o-series, gpt-5) reject a temperature other than the default, and
# spend part of max_completion_tokens on reasoning: they get a larger default limit. The o-series
# (o1, o3-mini, o3, o4-mini) also answers 400 ``unsupported_parameter`` to any ``parallel_tool_calls``,
# even ``false`` (langchain-ai/langchain#29704, run-llama/llama_index#20865).
_O_SERIES = (
    r"^o\d",
    {"send_temperature": False, "default_max_output_tokens": 32_000, "send_parallel_tool_calls": False},
)
_OPENAI_REASONING = (r"^(o\d|gpt-5)", {"send_temperature": False, "default_max_output_tokens": 32_000})

_EFFORT = frozenset({"reasoning_effort"})
# Anthropic vision and OpenAI image inputs both list PNG, JPEG, GIF (not animated) and WebP.
_IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_THINKING = frozenset({"thinking", "thinking_budget"})
# Local servers: a model may first be loaded from disk, and CPU prompt processing is slow.
_LOCAL: dict[str, Any] = {"default_idle_timeout": 600.0}

PRESETS: dict[str, Preset] = {
    "openai": Preset(
        Capabilities(
            kind="openai_chat",
            output_limit_field="max_completion_tokens",
            send_n=True,
            send_parallel_tool_calls=True,
            developer_role=True,
            default_max_output_tokens=16_384,
            knobs=_EFFORT,
            knob_style="openai",
            send_prompt_cache_key=True,
            user_image_media=_IMAGES,
        ),
        (_O_SERIES, _OPENAI_REASONING),
    ),
    # DeepSeek: no n, no parallel_tool_calls field; the reasoner ignores temperature. V4 thinks by
    # default and answers 400 unless the reasoning_content of tool-call turns comes back.
    "deepseek": Preset(
        Capabilities(
            kind="openai_chat",
            reasoning_replay="reasoning_content",
            default_max_output_tokens=32_000,
            knobs=_EFFORT | {"thinking"},
            knob_style="deepseek",
            # api-docs.deepseek.com/quick_start/token_usage: "1 Chinese character ≈ 0.6 token".
            cjk_tokens_per_char=0.6,
        ),
        ((r"reasoner", {"send_temperature": False}),),
    ),
    # DashScope documents no reasoning replay for Qwen (enable_thinking is an extra-body switch);
    # DeepSeek models hosted there take {"reasoning_replay": "reasoning_content"} as an override.
    "qwen": Preset(
        Capabilities(
            kind="openai_chat",
            send_parallel_tool_calls=True,
            default_max_output_tokens=16_384,
            knobs=_THINKING,
            knob_style="qwen",
            # Qwen's 151k BPE, measured with its tokenizer on Chinese prose: 0.55-0.6 per character.
            cjk_tokens_per_char=0.6,
        )
    ),
    # vLLM logs that parallel_tool_calls "will be ignored"; n works. It takes the reasoning back in
    # ``reasoning`` (renamed from reasoning_content), which gpt-oss needs between tool calls.
    "vllm": Preset(
        Capabilities(
            kind="openai_chat",
            send_n=True,
            reasoning_replay="reasoning",
            default_max_output_tokens=16_384,
            knobs=_EFFORT | {"thinking"},
            knob_style="vllm",
            **_LOCAL,
        )
    ),
    # llama.cpp: "Only one completion choice is allowed"; reasoning_content goes back to the template.
    "llamacpp": Preset(
        Capabilities(
            kind="openai_chat",
            send_parallel_tool_calls=True,
            default_max_output_tokens=16_384,
            reasoning_replay="reasoning_content",
            **_LOCAL,
        )
    ),
    # Ollama ignores tool_choice and n and has no parallel_tool_calls field. Its context is what the
    # server runs with (4k below 24 GiB of VRAM), not what the model could take: see ollama.py.
    "ollama": Preset(
        Capabilities(
            kind="openai_chat",
            send_tool_choice=False,
            reasoning_replay="reasoning",
            default_max_output_tokens=16_384,
            knobs=_EFFORT,
            knob_style="openai",
            default_context_window=4_096,
            context_probe="ollama",
            **_LOCAL,
        )
    ),
    "lmstudio": Preset(Capabilities(kind="openai_chat", default_max_output_tokens=16_384, **_LOCAL)),
    "demo": Preset(
        Capabilities(
            kind="openai_chat",
            send_parallel_tool_calls=True,
            default_max_output_tokens=2_048,
            default_idle_timeout=60.0,
            default_total_timeout=600.0,
        )
    ),
    # Gemini's OpenAI-compatible endpoint: no n or parallel_tool_calls, system role; reasoning_effort
    # is mapped to its thinking level. Thought signatures ride on each tool call's extra_content and
    # must be echoed; tool schemas are cut down to what its function declarations accept.
    "gemini": Preset(
        Capabilities(
            kind="openai_chat",
            echo_tool_call_extra=True,
            unsigned_call_signature="skip_thought_signature_validator",
            schema_dialect="gemini",
            default_max_output_tokens=32_000,
            knobs=_EFFORT,
            knob_style="openai",
        )
    ),
    # OpenRouter normalises reasoning into one "reasoning" object for every upstream model, and its
    # reasoning_details (which carry Anthropic/Gemini signatures) must go back unmodified.
    "openrouter": Preset(
        Capabilities(
            kind="openai_chat",
            replay_blocks=True,
            send_parallel_tool_calls=True,
            default_max_output_tokens=32_000,
            knobs=_EFFORT | _THINKING,
            knob_style="openrouter",
        )
    ),
    "openai_responses": Preset(
        Capabilities(
            kind="openai_responses",
            output_limit_field="max_output_tokens",
            send_parallel_tool_calls=True,
            send_stream_options=False,
            developer_role=True,
            default_max_output_tokens=16_384,
            knobs=_EFFORT,
            knob_style="openai_responses",
            replay_blocks=True,
            send_prompt_cache_key=True,
            tool_result_media=_IMAGES,
            user_image_media=_IMAGES,
        ),
        # Only reasoning models have reasoning to carry: others reject the include ("Encrypted
        # content is not supported with this model").
        ((_OPENAI_REASONING[0], {**_OPENAI_REASONING[1], "responses_encrypted_reasoning": True}),),
    ),
    "anthropic": Preset(
        Capabilities(
            kind="anthropic",
            send_parallel_tool_calls=True,  # as tool_choice.disable_parallel_tool_use
            send_stream_options=False,
            default_max_output_tokens=32_000,
            knobs=_EFFORT | _THINKING,
            knob_style="anthropic",
            replay_blocks=True,
            prefix_locked_thinking=True,
            prompt_cache="breakpoints",
            tool_result_media=_IMAGES,
            count_tokens_endpoint=True,
            user_image_media=_IMAGES,
            # "If your image's long edge is more than 1568 pixels ... it will first be scaled down".
            image_max_edge=1568,
        )
    ),
}


class ProfileError(ValueError):
    """A preset or capability override that cannot be resolved; the message says why.

    ``code`` names the rule and ``params`` its values, so a host can say it in its own language.
    """

    def __init__(self, message: str, code: str = "", **params: Any) -> None:
        super().__init__(message)
        self.code = code
        self.params = params


_FIELDS = frozenset(f.name for f in dataclasses.fields(Capabilities)) - {"kind"}


def resolve(preset: str, model: str, overrides: dict[str, Any] | None = None) -> Capabilities:
    """The capabilities for ``model`` under ``preset``, with the admin's ``overrides`` last."""
    try:
        chosen = PRESETS[preset]
    except KeyError:
        raise ProfileError(
            f"unknown provider preset {preset!r}; expected one of {sorted(PRESETS)}",
            "unknown_preset",
            preset=preset,
            known=sorted(PRESETS),
        ) from None
    caps = chosen.base
    for pattern, changes in chosen.model_rules:
        if re.search(pattern, model):
            caps = dataclasses.replace(caps, **changes)
            break
    if overrides:
        unknown = set(overrides) - _FIELDS
        if unknown:
            raise ProfileError(
                f"unknown capability override(s) {sorted(unknown)}; known: {sorted(_FIELDS)}",
                "unknown_override",
                unknown=sorted(unknown),
                known=sorted(_FIELDS),
            )
        for name in ("tool_result_media", "user_image_media"):
            if isinstance(overrides.get(name), list | tuple | set):  # JSON gives a list
                overrides = {**overrides, name: frozenset(overrides[name])}
        caps = dataclasses.replace(caps, **overrides)
    _check(caps)
    return caps


@functools.cache
def _hints() -> dict[str, Any]:
    # Resolved once: the annotations are strings (``from __future__ import annotations``), and
    # resolving them compiled 31 expressions on every run's start (docs/performance.md, session 15).
    return get_type_hints(Capabilities)


def _check(caps: Capabilities) -> None:
    """An override of the wrong kind is refused with the reason, not sent on the wire."""
    hints = _hints()
    for name in _FIELDS:
        hint, value = hints[name], getattr(caps, name)
        if get_origin(hint) is Literal and value not in get_args(hint):
            raise ProfileError(
                f"{name} must be one of {get_args(hint)}, not {value!r}",
                "override_choice",
                field=name,
                allowed=get_args(hint),
                value=repr(value),
            )
        if hint is bool and not isinstance(value, bool):
            raise ProfileError(
                f"{name} must be true or false, not {value!r}", "override_bool", field=name, value=repr(value)
            )
