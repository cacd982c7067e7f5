"""What the demo model will answer, independent of the wire format."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class PlannedToolCall:
    name: str
    arguments: dict[str, Any] | str  # a str is sent verbatim (used to fake truncated JSON)


@dataclass(frozen=True, slots=True)
class Plan:
    text_pieces: tuple[str, ...] = ()
    tool_calls: tuple[PlannedToolCall, ...] = ()
    finish_reason: str = "stop"
    # Fault injection, read by app.py: HTTP status to return instead, seconds to stall, etc.
    faults: dict[str, Any] = field(default_factory=dict)
