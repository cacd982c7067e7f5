"""Map upstream failures to the error tree of ``agent.providers.errors`` (providers.md §7.6).

Body shapes understood, whatever the HTTP status or whether they arrived before or in the stream:

* OpenAI, vLLM (new), llama.cpp, Ollama: ``{"error": {"message", "type", "param", "code"}}``
* Anthropic: ``{"type": "error", "error": {"type", "message"}, "request_id"}``
* vLLM (old, flat): ``{"object": "error", "message", "type", "param", "code": <int>}``
* Responses ``error`` event / ``response.error``: ``{"code", "message", "param"?}``
* proxies: ``{"error": "text"}``
* Gemini's OpenAI-compatible endpoint: the Google error wrapped in a list, ``[{"error": {...}}]``

A 400 that enforces a reasoning-replay rule keeps the provider's words and names the rule
(``replay_rules``), so the run's error says what to change.

``code`` may be a string, an int (vLLM, llama.cpp put the HTTP status there) or null, so every
comparison goes through ``str``. Context overflow is recognised by code *or* by message, because
DeepSeek reports it as ``invalid_request_error`` with only the message telling.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from agent.providers.errors import (
    AuthenticationFailed,
    BadRequest,
    ContextTooLong,
    MalformedStream,
    ProviderError,
    QuotaExceeded,
    RateLimited,
    StalledStream,
    StreamEndedEarly,
    TransientUpstream,
)
from agent.providers.replay_rules import explain

_CONTEXT_CODES = frozenset(
    {
        "context_length_exceeded",
        "exceed_context_size_error",
        "model_context_window_exceeded",
        "string_above_max_length",
    }
)
# Anthropic's wordings (strands-agents/sdk-python#1078): "prompt is too long: N tokens > M maximum",
# "input length and `max_tokens` exceed context limit: …", "input and output tokens exceed your
# context limit", "input length exceeds context window".
_CONTEXT_MESSAGE = re.compile(
    r"maximum context length|context length|exceeds the available context size|prompt is too long"
    r"|context window|input is too long|too many input tokens|exceeds? (?:your )?context limit",
    re.IGNORECASE,
)
_QUOTA_CODES = frozenset({"insufficient_quota", "credit_balance_exhausted", "billing_hard_limit_reached"})
_RATE_CODES = frozenset(
    {"rate_limit_exceeded", "rate_limit_error", "tokens", "requests", "too_many_requests"}
)
_AUTH_CODES = frozenset({"authentication_error", "permission_error", "invalid_api_key", "unauthorized"})
_TRANSIENT_CODES = frozenset(
    {
        "overloaded_error",
        "api_error",
        "server_error",
        "internal_server_error",
        "internalservererror",
        "service_unavailable",
        "timeout",
        "server_is_overloaded",
        "insufficient_system_resource",
    }
)
_RETRYABLE_STATUS = frozenset({408, 409, 429})


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """The fields every error body shape boils down to."""

    message: str
    type: str | None
    code: str | None


def _text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return str(value)


def extract_error(body: Any) -> ErrorInfo | None:
    """Find the error in any known body shape; None when the body is not an error."""
    if isinstance(body, list) and len(body) == 1:
        body = body[0]  # Gemini (OpenAI-compatible endpoint) wraps the error object in a list
    if not isinstance(body, Mapping):
        return None
    inner = body.get("error")
    if isinstance(inner, Mapping):
        upstream = _upstream(inner.get("metadata"))
        message = str(inner.get("message") or json.dumps(dict(inner), ensure_ascii=False))
        return ErrorInfo(
            message=f"{message}: {upstream}" if upstream else message,
            type=_text(inner.get("type")),
            code=_text(inner.get("code")),
        )
    if isinstance(inner, str) and inner:
        return ErrorInfo(message=inner, type=_text(body.get("type")), code=_text(body.get("code")))
    if body.get("object") == "error" or body.get("type") == "error":
        # vLLM's old flat shape, and the Responses ``error`` event.
        return ErrorInfo(
            message=str(body.get("message") or "upstream error"),
            type=_text(body.get("type")) if body.get("type") != "error" else None,
            code=_text(body.get("code")),
        )
    return None


def _upstream(metadata: Any) -> str | None:
    """The upstream provider's own error, which OpenRouter wraps as "Provider returned error" with
    ``metadata: {"provider_name", "raw"}`` (openrouter.ai/docs/api/reference/errors-and-debugging):
    without it a refused signature or a missing reasoning block reads as a bare "Provider returned
    error", and the replay rule it broke cannot be named."""
    if not isinstance(metadata, Mapping) or not isinstance(metadata.get("raw"), str | Mapping):
        return None
    raw = metadata["raw"]
    detail: str = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        parsed = None
    found = extract_error(parsed) if parsed is not None else None
    if found is not None:
        detail = found.message
    name = metadata.get("provider_name")
    return f"{name}: {detail[:1000]}" if isinstance(name, str) and name else detail[:1000]


def _effective_status(status: int | None, info: ErrorInfo) -> int | None:
    # vLLM and llama.cpp put the HTTP status in ``code``; use it for errors that arrive mid-stream.
    if status is None and info.code is not None and info.code.isdigit():
        code = int(info.code)
        if 100 <= code < 600:
            return code
    return status


def _error_class(status: int | None, info: ErrorInfo) -> type[ProviderError]:
    keys = {k.lower() for k in (info.code, info.type) if k}
    if keys & _CONTEXT_CODES or _CONTEXT_MESSAGE.search(info.message):
        return ContextTooLong
    if keys & _QUOTA_CODES or status == 402:
        return QuotaExceeded
    if status in (401, 403) or keys & _AUTH_CODES:
        return AuthenticationFailed
    if status == 429 or keys & _RATE_CODES:
        return RateLimited
    if keys & _TRANSIENT_CODES:
        return TransientUpstream
    if status is not None and (status in _RETRYABLE_STATUS or status >= 500):
        return TransientUpstream
    if status is not None and status >= 400:
        return BadRequest
    if keys & {"invalid_request_error", "not_found_error", "badrequesterror", "request_too_large"}:
        return BadRequest
    # An error of unknown kind in the middle of a 200 stream is the server failing, not the request.
    return TransientUpstream


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """``retry-after-ms``, then ``retry-after`` as seconds or an HTTP date (openai-python's order)."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def should_retry_header(headers: Mapping[str, str]) -> bool | None:
    value = (headers.get("x-should-retry") or "").strip().lower()
    return {"true": True, "false": False}.get(value)


def map_error(status: int | None, body: Any, headers: Mapping[str, str] | None = None) -> ProviderError:
    """Turn an error response (or an error payload met mid-stream, status None) into a ProviderError."""
    headers = headers or {}
    info = extract_error(body)
    if info is None:
        text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False, default=str)
        info = ErrorInfo(message=(text or f"HTTP {status}")[:500], type=None, code=None)
    effective = _effective_status(status, info)
    cls = _error_class(effective, info)
    return cls(
        explain(info.message) if cls is BadRequest else info.message,
        status=status if status is not None else effective,
        provider_code=info.code or info.type,
        retry_after=retry_after_seconds(headers),
        should_retry=should_retry_header(headers),
    )


def map_response_error(response: httpx.Response) -> ProviderError:
    """Map a non-2xx response whose body has been read."""
    try:
        body: Any = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = response.text
    return map_error(response.status_code, body, response.headers)


def map_transport_error(exc: httpx.HTTPError, idle_timeout: float) -> ProviderError:
    """httpx failures: all of them are the network or the server, so all are transient."""
    if isinstance(exc, httpx.ReadTimeout):
        return StalledStream(
            f"stalled: no bytes from the provider for {idle_timeout:g} s (not retried: the provider may "
            "already be generating and billing the answer; raise the provider's idle timeout if its "
            "model thinks silently for longer)"
        )
    if isinstance(exc, httpx.TimeoutException):
        return TransientUpstream(f"timed out: {type(exc).__name__}")
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        # The peer closed the connection mid-body ("peer closed connection without sending complete
        # message body"): a premature end, retried by http.py only if nothing was output yet.
        return StreamEndedEarly(f"the connection closed early: {type(exc).__name__}: {exc}")
    if isinstance(exc, httpx.DecodingError):
        return MalformedStream(f"could not decode the response: {exc}")
    return TransientUpstream(f"connection failed: {type(exc).__name__}: {exc}")
