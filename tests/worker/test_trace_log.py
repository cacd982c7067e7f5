"""The structured trace record of a stored event names what was sent without repeating it."""

from __future__ import annotations

import json
import logging

from chatapp.worker.trace_log import log_event, structured


def test_a_round_record_summarises_the_request_instead_of_repeating_it():
    payload = {
        "round_index": 2,
        "model": "m",
        "provider": "p",
        "finish_reason": "stop",
        "finish_reason_raw": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 3, "raw": {"secret-ish": "provider detail"}},
        "ttft_ms": 12.5,
        "duration_ms": 40.0,
        "request": {
            "wire": {"url": "https://api.example/v1/messages"},
            "messages": [{"role": "user", "content": "a long history " * 100}] * 3,
            "tools": [{"name": "read_file"}, {"name": "send_message"}],
            "tool_choice": "auto",
        },
    }
    record = json.loads(structured(7, 11, "round_finished", payload))
    assert record["run"] == 7 and record["seq"] == 11 and record["round"] == 2
    assert record["usage"] == {"input_tokens": 10, "output_tokens": 3}  # the raw usage stays in the row
    assert record["request"] == {
        "url": "https://api.example/v1/messages",
        "messages": 3,
        "tools": ["read_file", "send_message"],
        "tool_choice": "auto",
        "estimated_input_tokens": None,
    }


def test_a_tool_call_record_keeps_its_fields_and_other_events_their_payload(caplog):
    call = {"call_id": "c1", "name": "read_file", "status": "succeeded", "result": "ok", "media": ["x"]}
    record = json.loads(structured(1, 2, "tool_call", call))
    assert record["name"] == "read_file" and record["status"] == "succeeded" and "media" not in record
    with caplog.at_level(logging.INFO, logger="clearloop.trace"):
        log_event(1, 3, "context_compressed", {"step": "trim"})
    assert json.loads(caplog.records[-1].getMessage()) == {
        "run": 1,
        "seq": 3,
        "event": "context_compressed",
        "step": "trim",
    }
