"""What the demo model will answer, independent of the wire format."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class PlannedToolCall:
    name: str
    arguments: dict[str, Any] | str  # a str is sent verbatim (used to fake truncated or broken JSON)


@dataclass(frozen=True, slots=True)
class Plan:
    text_pieces: tuple[str, ...] = ()
    tool_calls: tuple[PlannedToolCall, ...] = ()
    finish_reason: str = "stop"
    # Fault injection, read by app.py: "429", "500", "stall", "malformed", "context-overflow", "slow".
    faults: frozenset[str] = frozenset()
    # More choices after choice 0 ([[demo:n2]]): a client must ignore them (R-MSG-3).
    extra_choices: tuple[Plan, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)
