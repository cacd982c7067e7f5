"""The one representation of what must be replayed: captured per wire, stored and reloaded
byte for byte (old rows included), shown only as "opaque, N bytes", sent back per capability."""

from __future__ import annotations

import json

from agent.messages import Message, ToolCall
from agent.providers import profiles
from agent.providers.openai_chat_request import build_payload as chat_payload
from agent.providers.openai_chat_stream import ChatAccumulator
from agent.providers.types import ModelRequest, ResponseDone
from agent.replay import ReplayBlock, summarise
from agent.state import RunState, response_from_dict
from chatapp.event_codec import event_from_row
from chatapp.redaction import redact, shown
from chatapp.views.display import round_reasoning

SIGNATURE = "sk-" + "A" * 40  # looks like a key to the redactor: it must survive storage anyway


def _feed(acc: ChatAccumulator, delta: dict, finish: str | None = None) -> None:
    acc.feed("", json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}))


def test_openrouter_reasoning_details_are_assembled_and_sent_back_unmodified():
    acc = ChatAccumulator()
    _feed(acc, {"reasoning": "Let", "reasoning_details": [{"type": "reasoning.text", "text": "Let", "index": 0, "format": "anthropic-claude-v1"}]})
    _feed(acc, {"reasoning_details": [{"type": "reasoning.text", "text": " me", "index": 0, "signature": None}]})
    _feed(acc, {"reasoning_details": [{"type": "reasoning.text", "text": "", "index": 0, "signature": "sig=="}]})
    _feed(acc, {"reasoning_details": [{"type": "reasoning.encrypted", "data": "enc==", "index": 1}]})
    _feed(acc, {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, "tool_calls")
    choice = next(e for e in acc.finish() if isinstance(e, ResponseDone)).response.primary
    details = [b.data for b in choice.replay]
    assert details == [
        {"type": "reasoning.text", "text": "Let me", "index": 0, "format": "anthropic-claude-v1", "signature": "sig=="},
        {"type": "reasoning.encrypted", "data": "enc==", "index": 1},
    ]
    message = Message(role="assistant", content=None, tool_calls=(ToolCall("c1", "f", "{}"),), replay=choice.replay)
    caps = profiles.resolve("openrouter", "anthropic/claude-fable-5")
    body = chat_payload(ModelRequest((Message.user("q"), message, Message.tool("c1", "{}"))), caps, model="m", max_output=None)
    assert body["messages"][1]["reasoning_details"] == details
    plain = chat_payload(ModelRequest((Message.user("q"), message)), profiles.resolve("openai", "gpt-4.1"), model="m", max_output=None)
    assert "reasoning_details" not in plain["messages"][1]


def test_vllm_and_ollama_take_reasoning_back_in_the_reasoning_field():
    call = ToolCall("c1", "f", "{}")
    message = Message(role="assistant", content=None, tool_calls=(call,), reasoning="raw CoT of gpt-oss")
    request = ModelRequest((Message.user("q"), message, Message.tool("c1", "{}")))
    for preset in ("vllm", "ollama"):
        body = chat_payload(request, profiles.resolve(preset, "gpt-oss-20b"), model="m", max_output=None)
        assert body["messages"][1]["reasoning"] == "raw CoT of gpt-oss"
        assert "reasoning_content" not in body["messages"][1]


def _stored_round(response_dict: dict) -> dict:
    """What the worker writes for a RoundFinished and reads back on resume."""
    payload = {"round_index": 0, "kind": "normal", "provider": "p", "model": "m", "request": {},
               "response": response_dict, "finish_reason": "tool_calls", "finish_reason_raw": "tool_use",
               "usage": {}, "ttft_ms": None, "duration_ms": 1.0}
    return json.loads(json.dumps(redact(payload, keep_replay=True), ensure_ascii=False))


def _response_with_blocks() -> dict:
    return {
        "choices": [{
            "index": 0, "text": "", "reasoning": f"thinking about {SIGNATURE}",
            "tool_calls": [{"id": "c1", "name": "f", "arguments_raw": "{}", "arguments": {}, "parse_error": None,
                            "truncated": False, "provider_extra": {"extra_content": {"google": {"thought_signature": SIGNATURE}}}}],
            "finish_reason": "tool_calls", "finish_reason_raw": "tool_use",
            "replay": [{"wire": "anthropic", "type": "thinking",
                        "data": {"type": "thinking", "thinking": f"thinking about {SIGNATURE}", "signature": SIGNATURE}},
                       {"wire": "anthropic", "type": "redacted_thinking", "data": {"type": "redacted_thinking", "data": "Zm9v"}}],
        }],
        "usage": {},
    }


def test_stored_bytes_survive_redaction_and_reload_exactly():
    stored = _stored_round(_response_with_blocks())
    event = event_from_row("round_finished", stored)
    choice = event.response.primary
    assert choice.replay[0].data["signature"] == SIGNATURE and choice.replay[0].data["thinking"].endswith(SIGNATURE)
    assert choice.tool_calls[0].provider_extra["extra_content"]["google"]["thought_signature"] == SIGNATURE
    assert "[REDACTED]" in choice.reasoning  # the readable copy is redacted as before
    state = RunState.rebuild("r", [Message.user("q")], [event])
    again = RunState.from_dict(json.loads(json.dumps(state.to_dict())))
    assert again.rounds[0].choice.replay == choice.replay


def test_rows_stored_before_replay_existed_still_load():
    old = {"choices": [{"index": 0, "text": "hi", "reasoning": "", "tool_calls": [
        {"id": "c1", "name": "f", "arguments_raw": "{}", "arguments": {}, "parse_error": None, "truncated": False}],
        "finish_reason": "stop", "finish_reason_raw": "stop", "refusal": None}], "usage": {"prompt_tokens": 3}}
    response = response_from_dict(old)
    assert response.primary.replay == () and response.primary.tool_calls[0].provider_extra is None
    assert event_from_row("round_finished", _stored_round(old)).response.primary.text == "hi"
    assert Message.from_dict({"role": "assistant", "content": "x"}).replay == ()


def test_what_is_shown_is_sanitised():
    visible = shown(_stored_round(_response_with_blocks()))
    text = json.dumps(visible)
    assert SIGNATURE not in text
    assert "[opaque, 43 bytes]" in text and "[opaque, 4 bytes]" in text
    reasoning = round_reasoning(_response_with_blocks())
    assert SIGNATURE not in reasoning["text"] and reasoning["text"].startswith("thinking about")
    assert reasoning["blocks"] == [
        {"type": "thinking", "opaque_bytes": 43},
        {"type": "redacted_thinking", "opaque_bytes": 4},
        {"type": "thought signature of f", "opaque_bytes": 43},
    ]
    assert summarise({"type": "reasoning", "encrypted_content": "abc", "summary": []}) == {
        "type": "reasoning", "encrypted_content": "[opaque, 3 bytes]", "summary": []}


def test_unknown_reasoning_shapes_are_ignored_and_the_run_goes_on():
    """A delta field we do not know (a future reasoning shape) neither breaks the stream nor is sent back."""
    acc = ChatAccumulator()
    _feed(acc, {"reasoning_details": "not a list", "thinking_blocks": [{"x": 1}], "content": "ok"}, "stop")
    choice = next(e for e in acc.finish() if isinstance(e, ResponseDone)).response.primary
    assert choice.text == "ok" and choice.replay == ()
    block = ReplayBlock.from_dict({"wire": "anthropic", "type": "thinking_v9", "data": {"type": "thinking_v9"}})
    assert block.opaque_bytes == 0 and block.text == ""


def test_a_replay_override_of_the_wrong_kind_is_refused_with_the_reason():
    import pytest

    with pytest.raises(ValueError, match=r"reasoning_replay must be one of \('none', 'reasoning_content', 'reasoning'\)"):
        profiles.resolve("deepseek", "deepseek-v4-pro", {"reasoning_replay": "reasoning-content"})
    with pytest.raises(ValueError, match="replay_blocks must be true or false"):
        profiles.resolve("anthropic", "claude-fable-5-1", {"replay_blocks": "yes"})
    assert profiles.resolve("qwen", "deepseek-v3.2", {"reasoning_replay": "reasoning_content"}).reasoning_replay == "reasoning_content"
