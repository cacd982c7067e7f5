"""Idle timeout against a server that stalls (released by an asyncio.Event, never by sleeping),
the total deadline, non-streaming mode, and the project's demo model served by uvicorn."""

from __future__ import annotations

import asyncio
import socket
import time

import httpx
import pytest
import uvicorn
from provider_cases import CASES_BY_ID, anthropic_exchanges, read
from provider_fixture_server import Reply
from provider_helpers import USER_REQUEST, collect, make_provider, response_of

from agent.providers.errors import StalledStream, TransientUpstream
from agent.providers.sse import iter_sse
from agent.providers.types import Finish, ResponseDone, TextDelta, ToolCallDelta, UsageReport
from demo.model import DEMO_MODEL_NAME, DemoModelSettings, create_app


async def test_idle_timeout_on_a_stalled_stream_after_output(server, http):
    body = CASES_BY_ID["openai_chat_stream_parallel_tool_calls"].body
    release = asyncio.Event()
    events = body.split(b"\n\n")
    first, rest = b"\n\n".join(events[:3]) + b"\n\n", b"\n\n".join(events[3:])
    server.queue(Reply([first, rest], stall=release, stall_before=1))
    provider = make_provider(http, server.base_url, "openai_chat", "openai", idle_timeout=0.3)
    seen = []
    try:
        with pytest.raises(TransientUpstream, match="stalled"):
            async for event in provider.stream(USER_REQUEST):
                seen.append(event)
    finally:
        release.set()
    assert any(isinstance(e, ToolCallDelta) for e in seen)
    assert len(server.requests) == 1  # output had reached the caller: no retry


async def test_a_silent_then_stalled_stream_is_not_retried_into_billed_attempts(server, http):
    # The provider accepted the request and went quiet: it may be thinking, and billing it. Retrying
    # would start (and bill) the generation again, so the stall ends the request, once.
    release = asyncio.Event()
    server.queue(Reply([b": nothing yet\n\n"], stall=release, stall_before=0))
    server.queue(Reply.sse(CASES_BY_ID["openai_chat_stream_finish_length"].body))
    provider = make_provider(http, server.base_url, "openai_chat", "openai", idle_timeout=0.3, max_retries=2)
    try:
        with pytest.raises(StalledStream, match="not retried") as caught:
            await collect(provider)
    finally:
        release.set()
    assert len(server.requests) == 1
    assert caught.value.retryable is False and "idle timeout" in caught.value.message


def test_hosted_presets_wait_minutes_for_a_silent_reasoning_model(http):
    # Chat Completions sends nothing while a reasoning model thinks (79 s measured, BerriAI/litellm
    # #36992): the default idle timeout of every hosted preset must outlast that.
    for preset in ("openai", "openai_responses", "deepseek", "qwen", "gemini", "openrouter", "anthropic"):
        kind = {"openai_responses": "openai_responses", "anthropic": "anthropic"}.get(preset, "openai_chat")
        provider = make_provider(http, "http://127.0.0.1:9", kind, preset)
        assert provider.idle_timeout >= 300, preset
        assert provider.total_timeout >= 1800, preset
    demo = make_provider(http, "http://127.0.0.1:9", "openai_chat", "demo")
    assert demo.idle_timeout == 60
    explicit = make_provider(http, "http://127.0.0.1:9", "openai_chat", "openai", idle_timeout=42.0)
    assert explicit.idle_timeout == 42.0


async def test_total_deadline_is_checked_on_every_piece():
    from agent.providers.retry import RetryPolicy

    async def body():
        yield b'data: {"choices":[]}\n\n'

    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())
    with pytest.raises(TransientUpstream, match="total timeout") as caught:
        async for _ in iter_sse(response, deadline=time.monotonic() - 1):
            pass
    # A provider that kept the stream alive (keep-alive comments) past the total timeout was
    # answering, and billing, all along: never retried either.
    assert isinstance(caught.value, StalledStream)
    assert RetryPolicy(max_retries=5).delay(caught.value, 0) is None


async def test_non_streaming_mode_emits_the_same_events(server, http):
    server.queue(Reply.json(200, read("openai_chat_nonstream_parallel_tool_calls.json")))
    provider = make_provider(
        http, server.base_url, "openai_chat", "openai", capability_overrides={"stream": False}
    )
    events = await collect(provider)
    sent = server.requests[0].json()
    assert sent["stream"] is False and "stream_options" not in sent
    response = response_of(events)
    assert [(c.id, c.name) for c in response.tool_calls] == [
        ("call_fdNz3vOBKYgOIpMdWotB9MjY", "GetWeatherArgs"),
        ("call_h1DWI1POMJLb0KwIyQHWXD4p", "get_stock_price"),
    ]
    assert response.tool_calls[1].arguments == {"ticker": "AAPL", "exchange": "NASDAQ"}
    assert response.finish_reason == "tool_calls" and response.usage.total_tokens == 209
    kinds = [type(e) for e in events]
    assert kinds == [ToolCallDelta, ToolCallDelta, Finish, UsageReport, ResponseDone]


async def test_non_streaming_anthropic_recording_with_is_error_replay(server, http):
    exchanges = anthropic_exchanges("anthropic_http_tool_result_is_error.json")
    for exchange in exchanges:
        server.queue(Reply.json(200, exchange["response"]["body"]))
    provider = make_provider(http, server.base_url, "anthropic", capability_overrides={"stream": False})
    first = response_of(await collect(provider))
    assert first.finish_reason == "tool_calls"
    (call,) = first.tool_calls
    assert call.id == "toolu_01A9HHF5Ezy3oBrKmSgfASm9"
    assert call.arguments == {"location": "San Francisco, CA", "units": "f"}
    second = response_of(await collect(provider))
    assert second.text.startswith("I apologize, but I'm getting an error") and second.finish_reason == "stop"
    assert second.usage.prompt_tokens == 760 and second.usage.completion_tokens == 63


@pytest.fixture
async def demo_url():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    app = create_app(DemoModelSettings(tokens_per_second=0, pieces_per_chunk=3))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    server.should_exit = True
    await task
    sock.close()


@pytest.mark.parametrize("stream", [True, False])
async def test_demo_model_over_uvicorn_with_the_demo_preset(demo_url, stream):
    async with httpx.AsyncClient() as http:
        provider = make_provider(
            http,
            demo_url,
            "openai_chat",
            "demo",
            model=DEMO_MODEL_NAME,
            capability_overrides={"stream": stream},
        )
        events = await collect(provider)
    response = response_of(events)
    assert response.text.startswith("Hello! I am the clearloop demo model")
    assert "You said: “hello”" in response.text
    assert response.finish_reason == "stop" and response.model == DEMO_MODEL_NAME
    assert response.usage.total_tokens and response.usage.total_tokens > 0
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == response.text
    if stream:
        assert sum(isinstance(e, TextDelta) for e in events) > 5


async def test_the_loop_does_not_retry_a_stall_into_another_billed_attempt(server, http):
    # The same silent-then-stalled answer through the real loop, whose round retry would otherwise
    # send the request again: one request, and the run fails naming the idle timeout to raise.
    from test_prompt_caching import Files

    from agent.loop import AllowAll, LoopSettings, NextStepFailed, run_agent
    from agent.messages import Message
    from agent.sink import ListSink
    from agent.state import RunState

    release = asyncio.Event()
    server.queue(Reply([b": thinking\n\n"], stall=release, stall_before=0))
    server.queue(Reply.sse(CASES_BY_ID["openai_chat_stream_finish_length"].body))
    provider = make_provider(http, server.base_url, "openai_chat", "openai", idle_timeout=0.3, max_retries=2)
    state = RunState.start("run", [Message.user("think it through")])
    try:
        step = await run_agent(state, provider, Files(), ListSink(), LoopSettings(round_retries=2), AllowAll())
    finally:
        release.set()
    assert isinstance(step, NextStepFailed) and step.code == "stalled" and "idle timeout" in step.message
    assert len(server.requests) == 1 and state.rounds == []
