"""Provider errors.

    ProviderError
    ├── RateLimited            429 / rate_limit_exceeded; carries retry_after (seconds) -- retryable
    ├── QuotaExceeded          insufficient_quota, credit exhausted            -- never retried
    ├── AuthenticationFailed   401 / 403                                       -- never retried
    ├── ContextTooLong         context_length_exceeded and friends (R-CTX-3)   -- never retried
    ├── TransientUpstream      5xx, 529 overloaded, connection reset            -- retryable
    │   └── StalledStream      no byte for idle_timeout s, or past total_timeout -- never retried
    ├── BadRequest             any other 4xx                                   -- never retried
    └── MalformedStream        bytes that do not follow the protocol
        └── StreamEndedEarly   the connection closed before the protocol's end (a proxy or idle cut)

Retries happen only before any output reached the caller; after that the error propagates.
A stream that ended early *before any output* is a network blip and is retried as
``TransientUpstream``; after output it stays a ``StreamEndedEarly`` and is not retried (what was
shown would be generated, and billed, again).

``agent.providers.error_map`` is the one place that turns HTTP statuses, error bodies and httpx
exceptions into these classes; ``agent.providers.retry`` decides whether and when to retry.
"""

from __future__ import annotations


class ProviderError(Exception):
    code = "provider_error"
    retryable = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider_code: str | None = None,
        retry_after: float | None = None,
        should_retry: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.provider_code = provider_code
        self.retry_after = retry_after
        # The server's own verdict (``x-should-retry``); None when it gave none.
        self.should_retry = should_retry

    def to_dict(self) -> dict[str, object]:
        return {
            "class": type(self).__name__,
            "code": self.code,
            "message": self.message,
            "status": self.status,
            "provider_code": self.provider_code,
            "retry_after": self.retry_after,
        }


class RateLimited(ProviderError):
    code = "rate_limited"
    retryable = True


class QuotaExceeded(ProviderError):
    code = "quota_exceeded"


class AuthenticationFailed(ProviderError):
    code = "auth_failed"


class ContextTooLong(ProviderError):
    code = "context_too_long"


class TransientUpstream(ProviderError):
    code = "transient_upstream"
    retryable = True


class StalledStream(TransientUpstream):
    """The provider went silent for longer than the idle timeout.

    Not retried, by the adapter or by the loop: the request was accepted, so the provider may be
    generating (a reasoning model thinks silently) and billing it; each retry would be another
    billed attempt. The remedy is a longer idle timeout for the provider, which the message names.
    """

    code = "stalled"
    retryable = False


class BadRequest(ProviderError):
    code = "bad_request"


class MalformedStream(ProviderError):
    code = "malformed_stream"


class StreamEndedEarly(MalformedStream):
    code = "stream_ended_early"
