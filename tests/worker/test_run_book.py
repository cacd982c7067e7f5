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


def _finished(index: int, raw: int, prompt: int) -> ev.RoundFinished:
    from agent.providers import types as pt

    return ev.RoundFinished(
        round_index=index, kind="normal", provider="p", model="m",
        request={"raw_input_tokens": raw}, response=pt.AssembledResponse((), pt.Usage(prompt, 1)),
        finish_reason="tool_calls", finish_reason_raw="tool_calls", usage=pt.Usage(prompt, 1),
        ttft_ms=1.0, duration_ms=2.0,
    )


def test_a_round_after_one_this_segment_finished_is_stored_without_reading_back():
    """The calibration's counts of the round before and the round's own shrink steps come from what
    the segment saw; a round whose predecessor the segment did not finish (the first of a resumed
    segment) is left to the stored rows (store._store_round)."""
    book = RunBook()
    assert book.extra_for(_finished(0, 100, 120)) == {}  # round 0: nothing before it
    book.note(_finished(0, 100, 120))
    assert book.extra_for(_finished(2, 300, 330)) == {}  # round 1 was not finished here
    book.note_compression(1, {"v": 3, "round_index": 1, "step": "drop", "detail": {"kept": (1, 2)}})
    assert book.extra_for(_finished(1, 200, 230)) == {
        "rounds_before": {
            "counts_before": {"request": {"raw_input_tokens": 100}, "usage": {"prompt_tokens": 120}},
            # As the row stores it: no version, JSON's lists.
            "compressions": [{"round_index": 1, "step": "drop", "detail": {"kept": [1, 2]}}],
        }
    }
    book.note(_finished(1, 200, 230))
    assert book.extra_for(_finished(2, 300, 330))["rounds_before"] == {
        "counts_before": {"request": {"raw_input_tokens": 200}, "usage": {"prompt_tokens": 230}},
        "compressions": [],
    }


def test_the_first_round_of_a_first_delivery_is_known_and_of_a_resumed_one_read_back():
    book = RunBook(fresh=True)
    book.note_compression(0, {"v": 3, "round_index": 0, "step": "drop", "detail": {}})
    assert book.extra_for(_finished(0, 100, 120)) == {
        "rounds_before": {
            "counts_before": None,
            "compressions": [{"round_index": 0, "step": "drop", "detail": {}}],
        }
    }
    assert RunBook().extra_for(_finished(0, 100, 120)) == {}  # resumed: a dead segment may have stored some
