"""Error bodies and retries over real HTTP: the recorded 400 and 429s, and synthetic header cases."""

from __future__ import annotations

import email.utils
import time

import pytest
from provider_cases import anthropic_exchanges, cassette
from provider_fixture_server import Reply
from provider_helpers import SleepRecorder, collect, make_provider, response_of

from agent.providers.errors import (
    BadRequest,
    ContextTooLong,
    QuotaExceeded,
    RateLimited,
    TransientUpstream,
)

OK_CHAT = (
    b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}\n\n'
    b'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


def _rate_limited(headers: dict[str, str]) -> Reply:
    body = {
        "error": {
            "message": "Rate limit reached. Please try again in 6s",
            "type": "tokens",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    return Reply.json(429, body, headers)


async def test_recorded_400_error_body_maps_to_bad_request_without_retry(server, http):
    interaction = cassette("openai_http_400_error.cassette.yaml")[0]["response"]
    server.queue(Reply.json(interaction["status"]["code"], interaction["parsed_body"]))
    provider = make_provider(http, server.base_url, "openai_responses")
    with pytest.raises(BadRequest) as raised:
        await collect(provider)
    assert raised.value.status == 400
    assert raised.value.provider_code == "decimal_below_min_value"
    assert "temperature" in raised.value.message
    assert len(server.requests) == 1


async def test_recorded_429_then_stream_is_retried_honouring_x_should_retry(server, http):
    exchanges = anthropic_exchanges("anthropic_http_429_then_stream.json")
    for exchange in exchanges:
        response = exchange["response"]
        if response["status_code"] == 429:
            server.queue(
                Reply.json(429, response["body"], {"x-should-retry": response["headers"]["x-should-retry"]})
            )
        else:
            server.queue(Reply.sse(response["body"].encode(), split_seed=3))
    sleep = SleepRecorder()
    provider = make_provider(http, server.base_url, "anthropic", sleep=sleep, retry_initial_backoff=0.5)
    response = response_of(await collect(provider))
    assert response.text == "[12345,67890]"
    assert response.finish_reason == "stop" and response.finish_reason_raw == "end_turn"
    assert len(server.requests) == 3
    # Exponential backoff with up to 25% jitter downwards: 0.5 then 1.0.
    assert 0.375 <= sleep.delays[0] <= 0.5 and 0.75 <= sleep.delays[1] <= 1.0
    assert all(r.json()["stream"] is True for r in server.requests)  # the same body each time
    assert len({r.body for r in server.requests}) == 1


async def test_recorded_429_gives_up_after_max_retries(server, http):
    exchanges = anthropic_exchanges("anthropic_http_429_then_stream.json")
    for exchange in exchanges[:2]:
        server.queue(Reply.json(429, exchange["response"]["body"], {"x-should-retry": "true"}))
    provider = make_provider(http, server.base_url, "anthropic", max_retries=1)
    with pytest.raises(RateLimited) as raised:
        await collect(provider)
    assert raised.value.provider_code == "rate_limit_error"
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "20"}, 0.02),
        ({"retry-after": "3"}, 3.0),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
    ],
)
async def test_synthetic_429_with_headers_waits_what_the_server_asks(server, http, headers, expected):
    server.queue(_rate_limited(headers), Reply.sse(OK_CHAT))
    sleep = SleepRecorder()
    provider = make_provider(http, server.base_url, "openai_chat", "openai", sleep=sleep)
    assert response_of(await collect(provider)).text == "ok"
    assert sleep.delays == [pytest.approx(expected)]


async def test_synthetic_429_retry_after_http_date(server, http):
    when = email.utils.formatdate(time.time() + 5, usegmt=True)
    server.queue(_rate_limited({"retry-after": when}), Reply.sse(OK_CHAT))
    sleep = SleepRecorder()
    provider = make_provider(http, server.base_url, "openai_chat", "openai", sleep=sleep)
    await collect(provider)
    assert 3.0 <= sleep.delays[0] <= 5.0


async def test_synthetic_429_x_should_retry_false_is_not_retried(server, http):
    server.queue(_rate_limited({"x-should-retry": "false", "retry-after": "1"}))
    provider = make_provider(http, server.base_url, "openai_chat", "openai")
    with pytest.raises(RateLimited) as raised:
        await collect(provider)
    assert raised.value.retry_after == 1.0
    assert len(server.requests) == 1


async def test_synthetic_429_asking_too_long_a_wait_is_raised_with_retry_after(server, http):
    server.queue(_rate_limited({"retry-after": "120"}))
    provider = make_provider(http, server.base_url, "openai_chat", "openai", retry_max_after=60)
    with pytest.raises(RateLimited) as raised:
        await collect(provider)
    assert raised.value.retry_after == 120.0
    assert len(server.requests) == 1


async def test_synthetic_429_insufficient_quota_is_never_retried(server, http):
    body = {
        "error": {
            "message": "You exceeded your current quota",
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
    }
    server.queue(Reply.json(429, body, {"x-should-retry": "true"}))
    provider = make_provider(http, server.base_url, "openai_chat", "openai")
    with pytest.raises(QuotaExceeded):
        await collect(provider)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 4097 tokens. However, your messages "
                    "resulted in 4294 tokens.",
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            },
        ),
        (
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 131072 tokens. However, you requested "
                    "131134 tokens",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_request_error",
                }
            },
        ),
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": "request (9000 tokens) exceeds the available context size (8192 "
                    "tokens), try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 9000,
                    "n_ctx": 8192,
                }
            },
        ),
        (
            400,
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "prompt is too long: 210000 tokens > 200000 maximum",
                },
            },
        ),
    ],
    ids=["openai", "deepseek", "llamacpp", "anthropic"],
)
async def test_synthetic_context_length_exceeded_by_code_or_message(server, http, status, body):
    server.queue(Reply.json(status, body))
    provider = make_provider(http, server.base_url, "openai_chat", "openai")
    with pytest.raises(ContextTooLong):
        await collect(provider)
    assert len(server.requests) == 1


async def test_synthetic_503_is_retried_then_succeeds(server, http):
    server.queue(
        Reply.json(503, {"error": {"message": "busy", "type": "server_error", "param": None, "code": None}})
    )
    server.queue(Reply.sse(OK_CHAT))
    sleep = SleepRecorder()
    provider = make_provider(http, server.base_url, "openai_chat", "openai", sleep=sleep)
    assert response_of(await collect(provider)).text == "ok"
    assert len(sleep.delays) == 1


async def test_synthetic_vllm_flat_error_with_int_code(server, http):
    body = {"object": "error", "message": "boom", "type": "InternalServerError", "param": None, "code": 500}
    server.queue(Reply.json(500, body), Reply.json(500, body), Reply.json(500, body))
    provider = make_provider(http, server.base_url, "openai_chat", "vllm")
    with pytest.raises(TransientUpstream) as raised:
        await collect(provider)
    assert raised.value.provider_code == "500"
    assert len(server.requests) == 3  # the first try and the default two retries
