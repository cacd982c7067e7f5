"""The closed union of events the agent loop emits to its ``Sink``.

Durable events (marked below) must be persisted by the sink before ``emit`` returns: the loop acts on
the next step only after that, which is what makes a run resumable after a crash (R-RUN-2).
Ephemeral events (deltas) may be coalesced and are only published.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.providers.types import AssembledResponse, FinishReason, Usage
from agent.statuses import ToolCallStatus


@dataclass(frozen=True, slots=True)
class RoundStarted:
    """Ephemeral. A request is about to be sent."""

    round_index: int
    kind: str  # "normal" | "continuation" | "final" (guard tripped, tool_choice none)
    model: str
    provider: str


@dataclass(frozen=True, slots=True)
class RoundRetried:
    """Ephemeral. The round's request failed before any output and is sent again after ``wait_ms``
    (the provider's retry policy, agent/providers/retry.py): the timeline draws each attempt."""

    round_index: int
    attempt: int  # the attempt that failed, counted from 1
    error_class: str
    message: str
    wait_ms: float


@dataclass(frozen=True, slots=True)
class TextDelta:
    """Ephemeral."""

    round_index: int
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """Ephemeral."""

    round_index: int
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """Ephemeral: a fragment of streamed arguments, shown live, never executed from (R-PROV-2)."""

    round_index: int
    index: int
    call_id: str | None
    name: str | None
    arguments: str


@dataclass(frozen=True, slots=True)
class RoundFinished:
    """Durable. The request actually sent (secrets removed) and the assembled response (R-MSG-2)."""

    round_index: int
    kind: str
    provider: str
    model: str
    request: dict[str, Any]
    response: AssembledResponse
    finish_reason: FinishReason
    finish_reason_raw: str | None
    usage: Usage
    ttft_ms: float | None
    duration_ms: float


@dataclass(frozen=True, slots=True)
class ToolCallChanged:
    """Durable. A tool call moved to ``status`` (see ARCHITECTURE's tool call states)."""

    round_index: int
    index: int
    call_id: str
    name: str
    arguments: str
    status: ToolCallStatus
    server: str | None = None
    risk: str | None = None
    result: str | None = None  # the tool message content sent to the model
    is_error: bool = False
    error_code: str | None = None
    truncated: bool = False
    attempts: int = 0
    duration_ms: float | None = None
    # MediaPart.to_dict() of images/audio in the result: stored with the call so a resumed run
    # sends the same bytes; hosts keep the data out of what they show.
    media: tuple[dict[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """Ephemeral. A running call reported progress (MCP ``notifications/progress``); throttled."""

    round_index: int
    index: int
    call_id: str
    name: str
    progress: float
    total: float | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ApprovalRequested:
    """Durable. The run stops here and holds no worker until a decision is recorded (R-RUN-3)."""

    round_index: int
    call_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ContextCompressed:
    """Durable. One shrink step of R-CTX-2, recorded in the trace."""

    round_index: int
    step: str
    detail: dict[str, Any] = field(default_factory=dict)
    tokens_before: int | None = None
    tokens_after: int | None = None


@dataclass(frozen=True, slots=True)
class RunFinished:
    """Durable."""

    text: str
    usage: Usage
    partial: bool = False


@dataclass(frozen=True, slots=True)
class RunFailed:
    """Durable."""

    error_class: str
    message: str
    code: str | None = None


Event = (
    RoundStarted
    | RoundRetried
    | TextDelta
    | ReasoningDelta
    | ToolCallDelta
    | RoundFinished
    | ToolCallChanged
    | ToolProgress
    | ApprovalRequested
    | ContextCompressed
    | RunFinished
    | RunFailed
)

DURABLE = (RoundFinished, ToolCallChanged, ApprovalRequested, ContextCompressed, RunFinished, RunFailed)
