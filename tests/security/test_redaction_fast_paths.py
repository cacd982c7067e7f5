"""The cheap checks in ``chatapp/redaction.py`` (a literal looked for before each pattern, one JSON
scan of a whole value before walking it) never let through what the full redaction removes."""

from __future__ import annotations

import pytest

from agent import events as ev
from chatapp import redaction
from chatapp.redaction import REDACTED, redact, redact_text, register_secret

SECRETS_IN_TEXT = [
    "Authorization: Bearer abcdefghijklmnop0123",
    "authorization: bEaReR abcdefghijklmnop0123",  # the pattern ignores case; so must its literal check
    "key sk-proj-ABCDEFGHIJKLMNOP1234 here",
    "token ghp_ABCDEFGHIJKLMNOPQRSTUVWX1234",
    "aws AKIAABCDEFGHIJKLMNOP end",
]


@pytest.mark.parametrize("text", SECRETS_IN_TEXT)
def test_each_pattern_still_redacts_in_a_string_and_deep_in_a_value(text):
    assert REDACTED in redact_text(text)
    value = {"request": {"messages": [{"role": "user", "content": text}], "tools": [{"name": "x"}]}}
    assert REDACTED in redact(value)["request"]["messages"][0]["content"]
    assert REDACTED in redact([1, [text]])[1][0]


def test_a_header_key_is_blanked_whatever_its_case_and_value():
    assert redact({"h": {"X-Api-Key": "short"}}) == {"h": {"X-Api-Key": REDACTED}}


def test_a_secret_with_a_character_json_escapes_is_still_found_deep_in_a_value():
    secret = 'quote"back\\slash-secret'
    register_secret(secret)
    try:
        value = {"a": [{"b": f"it is {secret}, indeed"}]}
        assert redact(value) == {"a": [{"b": f"it is {REDACTED}, indeed"}]}
    finally:
        redaction._extra.discard(secret)  # the registry only grows; this test's secret must not stay


def test_a_value_with_nothing_to_redact_is_returned_as_it_is():
    value = {"messages": [{"content": "hello " * 50}], "n": 3, "tools": [{"name": "read_file"}]}
    assert redact(value) == value
    # And a value json cannot encode is walked as before.
    odd = {"s": {1, 2}, "t": "Bearer Zq9x8w7v6u5t4s3r2p1"}
    assert redact(odd)["t"] == REDACTED


def test_the_replay_keys_are_kept_only_when_asked():
    value = {"replay": {"sig": "sk-ant-ABCDEFGHIJKLMNOP1234"}, "text": "ok"}
    assert redact(value, keep_replay=True)["replay"] == value["replay"]
    assert redact(value)["replay"] == {"sig": REDACTED}


def test_short_strings_skip_the_patterns_but_not_the_known_secrets():
    register_secret("six6ch")
    assert redact_text("six6ch") == REDACTED
    assert redaction._SHORTEST_MATCH <= len("sk-") + 16


@pytest.mark.parametrize("kind", [ev.TextDelta, ev.ReasoningDelta])
@pytest.mark.parametrize("text", [*SECRETS_IN_TEXT, "six6ch", "a six6ch b"])
def test_a_streamed_delta_is_redacted_as_any_other_event(kind, text):
    # Streamed text takes a shorter path than the other events (every chunk of every stream).
    register_secret("six6ch")
    delta = kind(round_index=2, text=text)
    cleaned = redaction.redact_event(delta)
    assert cleaned == kind(round_index=2, text=redact_text(text)) and REDACTED in cleaned.text
    # Every other event goes through the generic walk, which must agree.
    assert cleaned.text == redaction.redact(text)


def test_a_delta_with_nothing_to_redact_is_the_same_object():
    for delta in (ev.TextDelta(0, "x"), ev.TextDelta(0, "a plain token of text"), ev.ReasoningDelta(1, "hm")):
        assert redaction.redact_event(delta) is delta
    # Tool-argument fragments keep the generic walk (several string fields).
    call = ev.ToolCallDelta(0, 0, "c1", "read_file", '{"key": "sk-proj-ABCDEFGHIJKLMNOP1234"}')
    assert REDACTED in redaction.redact_event(call).arguments
