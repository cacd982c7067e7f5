"""The states a tool call and a run can be in: one vocabulary for the engine, the host's models and
the pages (``chatapp.models.ToolCall.Status`` and ``Run.Status`` hold exactly these values; a test
checks it). See docs/agent-loop.md and chatapp/services/run_lifecycle.py for the moves between them.
"""

from __future__ import annotations

from typing import Literal, get_args

ToolCallStatus = Literal[
    "proposed",
    "invalid",
    "awaiting_approval",
    "approved",
    "denied",
    "running",
    "succeeded",
    "failed",
    "unknown",
]
TOOL_CALL_STATUSES: tuple[ToolCallStatus, ...] = get_args(ToolCallStatus)
# A call in one of these is never run again (R-TOOL-3).
TERMINAL_CALL_STATUSES: frozenset[ToolCallStatus] = frozenset(
    {"invalid", "denied", "succeeded", "failed", "unknown"}
)
# A call in one of these was started, whatever came of it: it counts against per-run limits.
EXECUTED_CALL_STATUSES: frozenset[ToolCallStatus] = frozenset({"running", "succeeded", "failed", "unknown"})

RunStatus = Literal[
    "queued", "running", "awaiting_approval", "awaiting_sign_in", "succeeded", "failed", "cancelled", "denied"
]
RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)
# awaiting_sign_in: an MCP server of the run needs its user (or an admin) to sign in (OAuth).
ACTIVE_RUN_STATUSES: tuple[RunStatus, ...] = ("queued", "running", "awaiting_approval", "awaiting_sign_in")
# denied: the run finished, but a tool call of it was denied (by a person or a policy), so the answer
# was given without it: its own outcome, never "succeeded" (issue 12 item 2).
TERMINAL_RUN_STATUSES: tuple[RunStatus, ...] = ("succeeded", "failed", "cancelled", "denied")
