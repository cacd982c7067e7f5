"""Stored payloads carry a version, and rows written before versions existed still load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent import events as ev
from chatapp.event_codec import PAYLOAD_VERSION, event_from_row, event_payload, event_type

FROZEN = json.loads((Path(__file__).parent / "rows_2026_12_01.json").read_text(encoding="utf-8"))


def test_rows_frozen_in_the_format_of_2026_12_01_still_load():
    events = [event_from_row(row["type"], row["payload"]) for row in FROZEN]
    compressed, finished_round, call, finished = events
    assert isinstance(compressed, ev.ContextCompressed) and compressed.tokens_after == 7000
    assert isinstance(finished_round, ev.RoundFinished)
    assert finished_round.response.choices[0].tool_calls[0].arguments == {"path": "a.md"}
    assert finished_round.usage.prompt_tokens == 120
    assert isinstance(call, ev.ToolCallChanged) and (call.status, call.result) == ("succeeded", "hello")
    assert isinstance(finished, ev.RunFinished) and finished.text == "done" and not finished.partial


def test_every_payload_written_now_carries_the_version_and_reads_back_equal():
    for row in FROZEN:
        event = event_from_row(row["type"], row["payload"])
        payload = event_payload(event)
        assert payload["v"] == PAYLOAD_VERSION
        assert event_from_row(event_type(event), json.loads(json.dumps(payload))) == event


def test_fields_an_event_no_longer_has_are_dropped_and_a_newer_version_is_refused():
    row = dict(FROZEN[-1]["payload"], retired_field="x")
    assert event_from_row("run_finished", row).text == "done"
    with pytest.raises(ValueError, match="payload version 99"):
        event_from_row("run_finished", dict(row, v=99))


def test_host_and_ephemeral_kinds_rebuild_nothing():
    assert event_from_row("status", {"status": "running"}) is None
    assert event_from_row("delta", {"text": "hi"}) is None
