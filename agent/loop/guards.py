"""Guards against runaway loops (R-LOOP-6, 003 §4.3, 004 §6.1, §7.4).

A tripped guard does not fail the run: the next round is the final one, sent with tool_choice
"none" (or with no tools) and an instruction to answer with what the model has.
"""

from __future__ import annotations

import json

from agent.loop.settings import LoopSettings
from agent.state import RunState, ToolCallRecord


def repeated_failure(state: RunState, name: str, key: tuple[int, int], error: str | None) -> bool:
    """True when the previous executed call of the same tool failed with the same execution error."""
    previous = [
        c
        for c in state.calls.values()
        if c.name == name and c.key < key and c.status in ("failed", "succeeded", "unknown")
    ]
    if not previous:
        return False
    last = max(previous, key=lambda c: c.key)
    return last.status == "failed" and last.error_code == "execution_error" and error_of(last) == error


def error_of(record: ToolCallRecord) -> str | None:
    try:
        body = json.loads(record.result or "")
    except json.JSONDecodeError:
        return None
    return body.get("error") if isinstance(body, dict) else None


def guard_reason(state: RunState, settings: LoopSettings) -> str | None:
    """Why the next round must be the final one, or None."""
    last = state.last_round
    if last is not None:
        calls = state.calls_of_round(last.round_index)
        if any(c.error_code == "limit_reached" for c in calls):
            return "tool_limit"
        if any(
            c.error_code == "execution_error" and repeated_failure(state, c.name, c.key, error_of(c))
            for c in calls
        ):
            return "repeated_error"
    if state.model_rounds() >= settings.max_iterations:
        return "max_iterations"
    return None
