"""The output budget of one round (R-CTX-1, 000 §2.4).

output = min(requested max, model's max output, window - input - safety margin)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ContextLimits:
    context_window: int = 128_000
    model_max_output: int = 16_384
    requested_max_output: int | None = 4_096
    safety_margin: int = 512
    # Above this share of the window the working context is shrunk (R-CTX-2) ...
    compress_threshold: float = 0.8
    # ... down to this share: one big step, so the shrunk prefix then stays the same (and stays in
    # the provider's prompt cache) for many rounds instead of changing at every round.
    compress_target: float = 0.5
    # The smallest output worth asking for; below it the round is not sent as is.
    min_output: int = 256


def output_budget(limits: ContextLimits, input_tokens: int) -> int:
    """How many tokens this round may produce; <= 0 means the input leaves no room."""
    room = limits.context_window - input_tokens - limits.safety_margin
    caps = [limits.model_max_output, room]
    if limits.requested_max_output is not None:
        caps.append(limits.requested_max_output)
    return min(caps)


def over_threshold(limits: ContextLimits, input_tokens: int) -> bool:
    return input_tokens > limits.compress_threshold * limits.context_window
