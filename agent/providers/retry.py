"""When to retry a failed request, and after how long (R-PROV-6).

Copied from what openai-python does (providers.md §1.4): the server's ``x-should-retry`` has the
last word *against* a retry, a server-given delay (``retry-after-ms`` / ``Retry-After``) wins over
our backoff, and our backoff is exponential with jitter and capped. Two deliberate differences:

* errors that can never succeed by waiting (quota, auth, context too long, bad request) are never
  retried, even if a proxy says ``x-should-retry: true``;
* a server asking us to wait longer than ``max_retry_after`` is not obeyed by sleeping in a worker:
  the error goes up with its ``retry_after`` so the caller can show it or reschedule.

The adapter only asks this policy before any output reached its caller (see ``http.py``).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass

from agent.providers.errors import (
    AuthenticationFailed,
    BadRequest,
    ContextTooLong,
    ProviderError,
    QuotaExceeded,
    StalledStream,
)

# A stall is never retried: the provider may be billing a generation we would only start again.
_NEVER_RETRIED = (QuotaExceeded, AuthenticationFailed, ContextTooLong, BadRequest, StalledStream)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 2
    initial_backoff: float = 0.5
    max_backoff: float = 8.0
    # Longest server-requested wait we sleep through; beyond it the error is raised instead.
    max_retry_after: float = 60.0

    def delay(self, error: ProviderError, attempt: int) -> float | None:
        """Seconds to wait before retry number ``attempt + 1``, or None to give up now."""
        if attempt >= self.max_retries or isinstance(error, _NEVER_RETRIED):
            return None
        if error.should_retry is False:
            return None
        if not (error.retryable or error.should_retry is True):
            return None
        if error.retry_after is not None:
            return error.retry_after if error.retry_after <= self.max_retry_after else None
        return self.backoff(attempt)

    def backoff(self, attempt: int) -> float:
        base = min(self.initial_backoff * (2**attempt), self.max_backoff)
        # Up to 25% jitter downwards, so a crowd of workers does not retry in lockstep.
        return base * (1.0 - 0.25 * random.random())


# Told of each retry before the wait: (the failed attempt from 1, its error, the wait in seconds). The
# agent loop sets it around one round's stream (a context variable, so concurrent runs sharing an
# adapter each hear only their own retries), and shows every attempt on the run's timeline.
RetryListener = Callable[[int, ProviderError, float], Awaitable[None]]
retry_listener: ContextVar[RetryListener | None] = ContextVar("retry_listener", default=None)
