"""LoopSettings: the knobs of one run, filled by the host from the provider profile and admin config."""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.context.budget import ContextLimits
from agent.context.caps import DEFAULT_RESULT_CAP


@dataclass(frozen=True, slots=True)
class LoopSettings:
    max_iterations: int = 10  # model rounds before the guard forces a final answer (R-LOOP-1)
    max_same_tool: int = 3  # executions of one tool per run (R-LOOP-6, 004 §7.4)
    max_continuations: int = 3  # finish_reason length on plain text (R-LOOP-3)
    tool_timeout: float = 60.0  # seconds per call without a sign of life
    # A call that reports progress gets another tool_timeout after each report, up to this in all.
    tool_timeout_max: float = 600.0
    progress_interval: float = 0.5  # seconds: at most one progress event per call this often
    link_wait: float = 300.0  # seconds a tool's link (URL elicitation) waits for the user, clock stopped
    rate_limit_retries: int = 2  # a rate-limited tool is retried this many times (R-LOOP-5)
    max_rate_limit_wait: float = 30.0  # seconds; a longer retry_after is not waited for
    round_retries: int = 1  # extra attempts of a round after a retryable provider error
    max_round_retry_wait: float = 30.0
    # Some providers reject tool_choice "none"; then the final round is sent with no tools at all.
    tool_choice_none_supported: bool = True
    result_anchors: bool = True  # R-LOOP-7
    result_cap_chars: int = DEFAULT_RESULT_CAP
    limits: ContextLimits = field(default_factory=ContextLimits)
    use_bpe: bool = True  # False forces the chars-per-token estimate
    # Provider tokens per token we count, learned for this provider and model in earlier runs (the
    # host persists it); None until one is known. Calibrates the first round of a run.
    token_ratio: float | None = None
    # The same for what a tool loop appends between rounds (tool results): it tokenizes unlike the
    # fixed prefix (system prompt, tool schemas) that dominates a first round.
    appended_token_ratio: float | None = None
    # The provider's documented tokens per CJK character, when it has one (profiles.Capabilities).
    cjk_tokens_per_char: float | None = None
    parallel_tool_calls: bool | None = True  # sent only when tools are offered
    temperature: float | None = None
    n: int | None = None
    workspace: str | None = None  # passed to tools in ToolContext
    cache_key: str | None = None  # the prompt cache this run's requests share (one per conversation)
    cancel_check_every: int = 32  # stream events between two Sink.is_cancelled() calls
    # Stream events read between two turns handed to the event loop (0: never). A reader pauses by
    # itself only when its socket is empty; one that is always behind (a model flooding one-byte
    # chunks) would otherwise keep the loop from every other run's stream (model_round.stream_round).
    turn_every: int = 32
    # Preserved thinking (Anthropic): a thinking block is valid only while nothing before it changes,
    # so once the run holds one, compression re-applies its last plan and never rewrites anew.
    thinking_prefix_locked: bool = False
