"""finish_reason normalisation (providers.md §5) and error-body classification (§7.6), as tables."""

from __future__ import annotations

import pytest

from agent.providers import errors, finish
from agent.providers.error_map import map_error, retry_after_seconds
from agent.providers.retry import RetryPolicy


@pytest.mark.parametrize(
    ("raw", "tools", "expected"),
    [
        ("stop", False, "stop"),
        ("stop", True, "tool_calls"),
        (None, True, "tool_calls"),
        (None, False, "other"),
        ("tool_calls", True, "tool_calls"),
        ("function_call", True, "tool_calls"),
        ("length", False, "length"),
        ("content_filter", False, "content_filter"),
        ("insufficient_system_resource", False, "other"),
        ("error", False, "other"),
        (24, False, "other"),
        ("end_turn", False, "stop"),
        ("stop_sequence", False, "stop"),
        ("tool_use", True, "tool_calls"),
        ("max_tokens", False, "length"),
        ("refusal", False, "content_filter"),
        ("pause_turn", False, "other"),
        ("model_context_window_exceeded", False, "length"),
        ("compaction", False, "other"),
        ("STOP", True, "tool_calls"),
        ("MAX_TOKENS", False, "length"),
        ("SAFETY", False, "content_filter"),
        ("OTHER", False, "other"),
        ("MALFORMED_FUNCTION_CALL", False, "other"),
        ("CONTINUATION", False, "length"),
        ("guardrail_intervened", False, "content_filter"),
        ("eos_token", False, "stop"),
        ("sensitive", False, "content_filter"),
        ("load", False, "other"),
    ],
)
def test_finish_reason_table(raw, tools, expected):
    assert finish.normalize(raw, has_tool_calls=tools) == expected


def test_refusal_only_is_content_filter_and_responses_statuses():
    assert finish.normalize("stop", refusal_only=True) == "content_filter"
    assert finish.normalize_responses("completed", None, has_tool_calls=True) == "tool_calls"
    assert finish.normalize_responses("incomplete", "max_tokens", has_tool_calls=False) == "length"
    assert (
        finish.normalize_responses("incomplete", "content_filter", has_tool_calls=False) == "content_filter"
    )
    assert finish.normalize_responses("cancelled", None, has_tool_calls=False) == "other"


@pytest.mark.parametrize(
    ("status", "body", "cls", "code"),
    [
        (
            400,
            {"error": {"message": "x", "type": "invalid_request_error", "param": None, "code": None}},
            errors.BadRequest,
            "invalid_request_error",
        ),
        (
            401,
            {"error": {"message": "bad key", "type": "invalid_request_error", "code": "invalid_api_key"}},
            errors.AuthenticationFailed,
            "invalid_api_key",
        ),
        (
            403,
            {"type": "error", "error": {"type": "permission_error", "message": "no"}},
            errors.AuthenticationFailed,
            "permission_error",
        ),
        (
            429,
            {"error": {"message": "quota", "type": "insufficient_quota", "code": "insufficient_quota"}},
            errors.QuotaExceeded,
            "insufficient_quota",
        ),
        (
            429,
            {"error": {"message": "x", "type": "billing", "code": "credit_balance_exhausted"}},
            errors.QuotaExceeded,
            "credit_balance_exhausted",
        ),
        (
            413,
            {
                "error": {
                    "message": "Request too large (TPM)",
                    "type": "tokens",
                    "code": "rate_limit_exceeded",
                }
            },
            errors.RateLimited,
            "rate_limit_exceeded",
        ),
        (
            529,
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            errors.TransientUpstream,
            "overloaded_error",
        ),
        (
            500,
            {"object": "error", "message": "boom", "type": "InternalServerError", "param": None, "code": 500},
            errors.TransientUpstream,
            "500",
        ),
        (
            None,
            {"error": {"message": "bad", "type": "BadRequestError", "param": None, "code": 400}},
            errors.BadRequest,
            "400",
        ),
        (
            None,
            {"type": "error", "code": "server_error", "message": "x"},
            errors.TransientUpstream,
            "server_error",
        ),
        (
            404,
            {"error": {"message": "model not found", "type": "not_found_error", "param": None, "code": None}},
            errors.BadRequest,
            "not_found_error",
        ),
        (502, "<html>bad gateway</html>", errors.TransientUpstream, None),
        (400, {"error": "plain string error"}, errors.BadRequest, None),
        (408, {}, errors.TransientUpstream, None),
    ],
)
def test_error_bodies(status, body, cls, code):
    error = map_error(status, body)
    assert type(error) is cls
    assert error.provider_code == code


def test_retry_after_parsing_and_policy():
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412475.0) == 5.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    policy = RetryPolicy(max_retries=2)
    assert policy.delay(errors.ContextTooLong("x", should_retry=True), 0) is None
    assert policy.delay(errors.TransientUpstream("x"), 2) is None
    assert policy.delay(errors.TransientUpstream("x", retry_after=0.1), 0) == 0.1
    assert policy.delay(errors.MalformedStream("x"), 0) is None
    assert all(policy.backoff(5) <= policy.max_backoff for _ in range(20))
