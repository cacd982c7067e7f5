"""What one step of the loop decided. The runner is an if/elif over these ending in ``raise``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PendingApproval:
    call_id: str
    name: str
    arguments: str
    round_index: int
    index: int
    risk: str | None = None
    server: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class NextStepFinalOutput:
    text: str
    partial: bool = False  # cut by the output limit after the last continuation, or filtered


@dataclass(frozen=True, slots=True)
class NextStepRunAgain:
    pass


@dataclass(frozen=True, slots=True)
class NextStepInterruption:
    """The run waits for decisions on these calls; it holds no worker meanwhile (R-RUN-3)."""

    approvals: tuple[PendingApproval, ...]


@dataclass(frozen=True, slots=True)
class NextStepSignIn:
    """Calls of these servers could not be sent until a person signs in (MCP OAuth). They are
    "approved" again, not run; the run waits holding no worker and runs them when resumed."""

    servers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NextStepFailed:
    error_class: str
    message: str
    code: str | None = None


NextStep = NextStepFinalOutput | NextStepRunAgain | NextStepInterruption | NextStepSignIn | NextStepFailed
