"""What the recorder keeps about a segment: the round's text so far, the tool definitions offered."""

from __future__ import annotations

from agent import events as ev
from agent.messages import ToolSpec
from agent.toolbox import ToolInfo
from chatapp.worker.run_book import RunBook


def test_a_failure_carries_the_text_of_the_round_in_flight_only():
    book = RunBook()
    for event in (
        ev.RoundStarted(round_index=0, kind="normal", model="m", provider="p"),
        ev.TextDelta(round_index=0, text="old round"),
        ev.RoundStarted(round_index=1, kind="normal", model="m", provider="p"),
        ev.TextDelta(round_index=1, text="Hel"),
        ev.ReasoningDelta(round_index=1, text="not an answer"),
        ev.TextDelta(round_index=1, text="lo"),
    ):
        book.note(event)
    assert book.extra_for(ev.RunFailed("Cancelled", "stopped", "cancelled")) == {"partial_text": "Hello"}


def test_a_tool_call_is_stored_with_the_definition_that_was_offered():
    spec = ToolSpec(name="echo", description="says it back", parameters={"type": "object"})
    book = RunBook(tool_infos={"echo": ToolInfo(spec=spec, risk="write", server="s1", definition_hash="h")})
    call = ev.ToolCallChanged(
        round_index=0, index=0, call_id="c", name="echo", arguments="{}", status="running"
    )
    extra = book.extra_for(call)
    assert extra["definition_hash"] == "h"
    assert extra["definition"] == spec.to_dict() | {"server": "s1", "risk": "write", "hints": {}}
    unknown = ev.ToolCallChanged(
        round_index=0, index=1, call_id="d", name="gone", arguments="", status="running"
    )
    assert book.extra_for(unknown) == {}
