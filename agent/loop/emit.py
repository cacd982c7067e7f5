"""One path for durable events: persist through the sink first, then fold into the state."""

from __future__ import annotations

from typing import Any

from agent.events import DURABLE, Event, ToolCallChanged
from agent.sink import Sink
from agent.state import RunState, ToolCallRecord


async def emit(state: RunState, sink: Sink, event: Event) -> None:
    await sink.emit(event)
    if isinstance(event, DURABLE):
        # Only after the sink returned: a crash in between replays to the same state (R-RUN-2).
        state.apply(event)


def call_changed(record: ToolCallRecord, status: str, **changes: Any) -> ToolCallChanged:
    fields: dict[str, Any] = {
        "round_index": record.round_index,
        "index": record.index,
        "call_id": record.call_id,
        "name": record.name,
        "arguments": record.arguments,
        "status": status,
        "server": record.server,
        "risk": record.risk,
        "result": record.result,
        "is_error": record.is_error,
        "error_code": record.error_code,
        "truncated": record.truncated,
        "attempts": record.attempts,
        "media": record.media,
    }
    fields.update(changes)
    return ToolCallChanged(**fields)
