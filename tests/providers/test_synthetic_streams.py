"""Cases providers.md lists as never recorded, written by hand (``synthetic`` in every name)."""

from __future__ import annotations

import json

import pytest
from provider_cases import CASES_BY_ID
from provider_fixture_server import Reply
from provider_helpers import USER_REQUEST, collect, make_provider, response_of

from agent.providers.errors import MalformedStream, TransientUpstream
from agent.providers.types import TextDelta


def chat_sse(*choices_or_chunks: dict, done: bool = True) -> bytes:
    out = []
    for item in choices_or_chunks:
        chunk = item if "choices" in item or "error" in item else {"id": "c1", "choices": [item]}
        out.append(f"data: {json.dumps(chunk)}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def call_delta(index: int, args: str, call_id: str | None = None, name: str | None = None) -> dict:
    call: dict = {"index": index, "function": {"arguments": args}}
    if call_id:
        call |= {"id": call_id, "type": "function"}
        call["function"]["name"] = name
    return {"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}


def events_sse(*events: dict) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


async def run(server, http, body: bytes, kind="openai_chat", preset="openai", **settings):
    server.queue(Reply.sse(body, split_seed=1))
    return await collect(make_provider(http, server.base_url, kind, preset, **settings))


async def test_synthetic_chat_length_in_the_middle_of_tool_arguments(server, http):
    body = chat_sse(
        call_delta(0, "", "call_a", "write_file"),
        call_delta(0, '{"path": "notes.md", "content": "# Notes\\n\\nThe first'),
        {"index": 0, "delta": {}, "finish_reason": "length"},
    )
    choice = response_of(await run(server, http, body)).primary
    (call,) = choice.tool_calls
    assert call.truncated and call.arguments is None and call.parse_error
    assert choice.finish_reason == "length" and choice.finish_reason_raw == "length"


async def test_synthetic_chat_length_before_any_argument_is_truncated_not_empty(server, http):
    body = chat_sse(
        call_delta(0, "", "call_a", "write_file"), {"index": 0, "delta": {}, "finish_reason": "length"}
    )
    (call,) = response_of(await run(server, http, body)).tool_calls
    assert call.truncated and call.arguments is None


async def test_synthetic_interleaved_parallel_tool_call_deltas(server, http):
    body = chat_sse(
        call_delta(0, "", "call_a", "read_file"),
        call_delta(1, "", "call_b", "search_files"),
        call_delta(0, '{"path": '),
        call_delta(1, '{"pattern": "*.md"'),
        call_delta(0, '"a.txt"}'),
        call_delta(1, "}"),
        {"index": 0, "delta": {}, "finish_reason": "tool_calls"},
    )
    calls = response_of(await run(server, http, body)).tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_a", "read_file", {"path": "a.txt"}),
        ("call_b", "search_files", {"pattern": "*.md"}),
    ]


async def test_synthetic_vllm_tool_calls_label_hiding_a_length_stop(server, http):
    body = chat_sse(
        call_delta(0, "", "call_a", "write_file"),
        call_delta(0, '{"content": "abc'),
        {"index": 0, "delta": {}, "finish_reason": "tool_calls"},
    )
    choice = response_of(await run(server, http, body, preset="vllm")).primary
    assert choice.tool_calls[0].truncated
    assert choice.finish_reason == "length" and choice.finish_reason_raw == "tool_calls"


async def test_synthetic_malformed_but_complete_arguments_are_a_parse_error_not_truncation(server, http):
    body = chat_sse(
        call_delta(0, '{"a": b}', "call_a", "f"), {"index": 0, "delta": {}, "finish_reason": "tool_calls"}
    )
    (call,) = response_of(await run(server, http, body)).tool_calls
    assert call.parse_error and not call.truncated


async def test_synthetic_tool_calls_with_finish_stop_are_tool_calls(server, http):
    body = chat_sse(call_delta(0, "{}", "call_a", "f"), {"index": 0, "delta": {}, "finish_reason": "stop"})
    choice = response_of(await run(server, http, body, preset="vllm")).primary
    assert choice.finish_reason == "tool_calls" and choice.finish_reason_raw == "stop"


async def test_synthetic_deepseek_insufficient_system_resource_is_other(server, http):
    body = chat_sse(
        {"index": 0, "delta": {"content": "partial"}, "finish_reason": None},
        {"index": 0, "delta": {}, "finish_reason": "insufficient_system_resource"},
    )
    choice = response_of(await run(server, http, body, preset="deepseek")).primary
    assert choice.finish_reason == "other" and choice.finish_reason_raw == "insufficient_system_resource"


async def test_synthetic_missing_ids_get_deterministic_ones(server, http):
    body = chat_sse(
        {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{}"}}]}},
        {"index": 0, "delta": {}, "finish_reason": "tool_calls"},
    )
    first = response_of(await run(server, http, body)).tool_calls[0].id
    second = response_of(await run(server, http, body)).tool_calls[0].id
    assert first == second and first.startswith("call_")


async def test_synthetic_sse_framing_comments_multiline_data_no_done_no_final_newline(server, http):
    body = (
        b": OPENROUTER PROCESSING\r\n\r\n"
        b'data: {"id":"c1","choices":[{"index":0,\r\ndata: "delta":{"content":"h\xc3\xa9llo \xe2\x9c\x93"}}]}\r\n\r\n'
        b": keep-alive\n\n"
        b'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}'
    )
    response = response_of(await run(server, http, body))
    assert response.text == "héllo ✓" and response.finish_reason == "stop"


async def test_synthetic_chat_mid_stream_error_is_mapped(server, http):
    body = chat_sse(
        {"index": 0, "delta": {"content": "so far"}, "finish_reason": None},
        {
            "error": {
                "message": "CUDA out of memory",
                "type": "InternalServerError",
                "param": None,
                "code": 500,
            }
        },
    )
    with pytest.raises(TransientUpstream, match="CUDA"):
        await run(server, http, body, preset="vllm")
    assert len(server.requests) == 1  # output reached the caller: no retry


async def test_synthetic_chat_eof_before_any_finish_is_malformed(server, http):
    body = chat_sse({"index": 0, "delta": {"content": "cut"}, "finish_reason": None}, done=False)
    with pytest.raises(MalformedStream):
        await run(server, http, body)


async def test_synthetic_anthropic_mid_stream_error_after_output(server, http):
    body = events_sse(
        {
            "type": "message_start",
            "message": {"id": "msg_1", "model": "claude", "usage": {"input_tokens": 5}},
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}},
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    server.queue(Reply.sse(body))
    seen = []
    with pytest.raises(TransientUpstream, match="Overloaded"):
        async for event in make_provider(http, server.base_url, "anthropic").stream(USER_REQUEST):
            seen.append(event)
    assert [e.text for e in seen if isinstance(e, TextDelta)] == ["Hel"]
    assert len(server.requests) == 1


async def test_synthetic_anthropic_error_before_output_is_retried(server, http):
    error = events_sse(
        {
            "type": "message_start",
            "message": {"id": "msg_1", "model": "claude", "usage": {"input_tokens": 5}},
        },
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    ok = CASES_BY_ID["anthropic_stream_text_then_tool_use"].body
    server.queue(Reply.sse(error), Reply.sse(ok))
    response = response_of(await collect(make_provider(http, server.base_url, "anthropic")))
    assert response.tool_calls[0].name == "get_weather"
    assert len(server.requests) == 2


async def test_synthetic_anthropic_eof_before_message_stop_is_malformed(server, http):
    body = CASES_BY_ID["anthropic_stream_text_then_tool_use"].body
    cut = body[: body.index(b"event: message_stop")]
    with pytest.raises(MalformedStream, match="message_stop"):
        await run(server, http, cut, "anthropic", "anthropic", max_retries=0)


def _responses_incomplete() -> bytes:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "write_file", "arguments": ""}
    response = {
        "id": "resp_1",
        "model": "gpt-x",
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "usage": {"input_tokens": 10, "output_tokens": 64, "total_tokens": 74},
    }
    return events_sse(
        {
            "type": "response.created",
            "response": {**response, "status": "in_progress", "incomplete_details": None},
        },
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_1",
            "output_index": 0,
            "delta": '{"path": "a.md", "content": "long',
        },
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "arguments": '{"path": "a.md", "content": "long', "status": "incomplete"},
        },
        {"type": "response.incomplete", "response": response},
    )


async def test_synthetic_responses_incomplete_max_output_tokens(server, http):
    choice = response_of(await run(server, http, _responses_incomplete(), "openai_responses", "")).primary
    assert choice.finish_reason == "length" and choice.finish_reason_raw == "incomplete:max_output_tokens"
    assert choice.tool_calls[0].truncated and choice.tool_calls[0].id == "call_1"


async def test_synthetic_responses_eof_before_terminal_event_is_malformed(server, http):
    body = _responses_incomplete()
    cut = body[: body.index(b"event: response.incomplete")]
    with pytest.raises(MalformedStream, match="response.completed"):
        await run(server, http, cut, "openai_responses", "", max_retries=0)


async def test_synthetic_responses_failed_and_error_event_raise(server, http):
    failed = events_sse(
        {
            "type": "response.failed",
            "response": {"id": "r", "status": "failed", "error": {"code": "server_error", "message": "oops"}},
        }
    )
    with pytest.raises(TransientUpstream, match="oops"):
        await run(server, http, failed, "openai_responses", "", max_retries=0)
    error = events_sse({"type": "error", "code": "invalid_prompt", "message": "bad prompt", "param": None})
    with pytest.raises(Exception, match="bad prompt"):
        await run(server, http, error, "openai_responses", "", max_retries=0)


async def test_synthetic_reasoning_field_names(server, http):
    body = chat_sse(
        {"index": 0, "delta": {"reasoning": "think "}, "finish_reason": None},
        {"index": 0, "delta": {"reasoning_content": "hard", "reasoning": "hard"}, "finish_reason": None},
        {"index": 0, "delta": {"content": "done"}, "finish_reason": "stop"},
    )
    choice = response_of(await run(server, http, body, preset="ollama")).primary
    assert choice.reasoning == "think hard" and choice.text == "done"
