"""The I/O shell every adapter shares: send, retry, read the stream, hand bytes to the accumulator.

An adapter subclasses ``HttpProvider`` and supplies four sans-I/O pieces: the URL and headers, the
JSON body (``build_payload``), a fresh ``StreamAccumulator`` and the events for a non-streaming
body. Everything that touches the network lives here, so the rules hold for all three wire APIs:

* one request body per ``stream()`` call, built once, identical on every retry, and the same one
  ``describe_request`` shows the trace (secrets removed). The one exception: a provider that refuses
  the prompt-cache fields (``caching.is_cache_refusal``) gets the body again without them, and this
  provider object stops sending them, so the trace still shows what was sent. And a Gemini 3
  request whose thought signatures the API refuses as not valid (sealed by another account or
  endpoint) is sent once more with Google's documented stand-in instead of each signature
  (``unsigned_call_signature``): the run goes on, with the model's earlier thoughts lost;
* retries (``retry.RetryPolicy``) only while nothing has been yielded to the caller; a stream that
  ended early before any output counts as transient (``StreamEndedEarly`` -> ``TransientUpstream``);
* idle timeout = httpx read timeout (stream mode); total timeout = a deadline over the whole attempt;
* a 200 that is JSON although a stream was asked for (some proxies, and pre-stream errors) is read
  as a non-streaming body or mapped as an error;
* the caller closing the generator (user pressed stop) closes the HTTP response.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, ClassVar, Protocol

import httpx

from agent.providers import knobs
from agent.providers.caching import is_cache_refusal
from agent.providers.error_map import extract_error, map_error, map_response_error, map_transport_error
from agent.providers.errors import (
    BadRequest,
    MalformedStream,
    ProviderError,
    StalledStream,
    StreamEndedEarly,
    TransientUpstream,
)
from agent.providers.profiles import Capabilities
from agent.providers.redact import redact_request
from agent.providers.retry import RetryPolicy, retry_listener
from agent.providers.settings import ProviderSettings
from agent.providers.sse import is_event_stream, iter_sse
from agent.providers.types import ModelEvent, ModelRequest

Sleep = Callable[[float], Awaitable[None]]
log = logging.getLogger(__name__)
# Google's words for a thought signature it did not issue: "Corrupted thought signature." (Gemini
# API), "Invalid thought signature.", "Thought signature is not valid." (Vertex AI); docs/providers.md.
FOREIGN_SIGNATURE = re.compile(
    r"corrupted thought signature|invalid thought signature|thought signature is not valid", re.IGNORECASE
)


def without_call_signatures(request: ModelRequest) -> ModelRequest:
    """The request with no tool call's kept ``provider_extra``: the builder then puts the profile's
    stand-in signature on the first call of each step, as for history stored before signatures."""
    messages = tuple(
        dataclasses.replace(
            m, tool_calls=tuple(dataclasses.replace(c, provider_extra=None) for c in m.tool_calls)
        )
        if any(c.provider_extra for c in m.tool_calls)
        else m
        for m in request.messages
    )
    return dataclasses.replace(request, messages=messages)


class StreamAccumulator(Protocol):
    """Sans-I/O: fed one SSE event at a time, returns the deltas to emit right away."""

    done: bool  # the wire's terminator was seen; reading stops there

    def feed(self, event: str, data: str) -> list[ModelEvent]: ...

    def finish(self) -> list[ModelEvent]:
        """Finish events, usage, ResponseDone; raises MalformedStream if the stream ended early."""
        ...


class HttpProvider:
    kind: ClassVar[str]

    def __init__(
        self,
        settings: ProviderSettings,
        http: httpx.AsyncClient,
        capabilities: Capabilities,
        *,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.settings = settings
        self.capabilities = capabilities
        self.idle_timeout = settings.idle_timeout or capabilities.default_idle_timeout
        self.total_timeout = settings.total_timeout or capabilities.default_total_timeout
        self._http = http
        self._sleep = sleep
        self.retry = RetryPolicy(
            max_retries=settings.max_retries,
            initial_backoff=settings.retry_initial_backoff,
            max_backoff=settings.retry_max_backoff,
            max_retry_after=settings.retry_max_after,
        )

    @property
    def name(self) -> str:
        return self.settings.name

    @property
    def model(self) -> str:
        return self.settings.model

    # -- supplied by each adapter --------------------------------------------------------------
    def url(self) -> str:
        raise NotImplementedError

    def auth_headers(self) -> dict[str, str]:
        raise NotImplementedError

    def protocol_headers(self) -> dict[str, str]:
        """Non-secret headers the wire needs (e.g. ``anthropic-version``)."""
        return {}

    def build_payload(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    def new_accumulator(self) -> StreamAccumulator:
        raise NotImplementedError

    def events_from_body(self, body: dict[str, Any]) -> list[ModelEvent]:
        raise NotImplementedError

    # -- shared ---------------------------------------------------------------------------------
    @property
    def max_output_tokens(self) -> int | None:
        """The admin's output limit, else the preset's default (sized for thinking models)."""
        return self.settings.max_output_tokens or self.capabilities.default_max_output_tokens

    def payload(self, request: ModelRequest) -> dict[str, Any]:
        """The adapter's body plus the provider's knobs and extra body: what is actually sent."""
        body = self.build_payload(request)
        return knobs.apply(body, self.settings.knobs, self.capabilities, self.settings.extra_body)

    def describe_request(self, request: ModelRequest) -> dict[str, Any]:
        """The request ``stream(request)`` sends, secrets removed: for the trace (R-MSG-2)."""
        described = {
            "method": "POST",
            "url": self.url(),
            "headers": {**self.settings.extra_headers, **self.protocol_headers()},
            "body": self.payload(request),
        }
        return redact_request(described, [self.settings.api_key] if self.settings.api_key else [])

    def _headers(self) -> dict[str, str]:
        headers = {**self.settings.extra_headers, **self.protocol_headers(), **self.auth_headers()}
        if self.capabilities.stream:
            headers["accept"] = "text/event-stream"
        return headers

    def _timeout(self) -> httpx.Timeout:
        total = self.total_timeout
        # Without a stream no byte comes until the whole answer is ready: only the total applies.
        read = min(self.idle_timeout, total) if self.capabilities.stream else total
        return httpx.Timeout(
            connect=min(10.0, total), read=read, write=min(30.0, total), pool=min(30.0, total)
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        payload = self.payload(request)
        attempt = 0
        unsigned = False
        while True:
            yielded = False
            try:
                async for event in self._attempt(payload):
                    yielded = True
                    yield event
                return
            except ProviderError as raised:
                error = raised
                if isinstance(error, StreamEndedEarly) and not yielded:
                    # Nothing was produced yet: a cut connection, not a broken protocol.
                    error = TransientUpstream(f"{error.message} (before any output)", status=error.status)
                if not yielded and is_cache_refusal(error) and self._drop_caching():
                    log.warning("%s refused the prompt cache fields (%s); sending without", self.name, error)
                    payload = self.payload(request)
                    continue
                if not yielded and not unsigned and self._foreign_signatures(error, request):
                    log.warning(
                        "%s refused the thought signatures (%s); sending the documented stand-in instead",
                        self.name,
                        error,
                    )
                    request, unsigned = without_call_signatures(request), True
                    payload = self.payload(request)
                    continue
                delay = None if yielded else self.retry.delay(error, attempt)
                if delay is None:
                    if error is raised:
                        raise
                    raise error from raised
            attempt += 1
            listener = retry_listener.get()
            if listener is not None:
                await listener(attempt, error, delay)
            await self._sleep(delay)

    def _foreign_signatures(self, error: ProviderError, request: ModelRequest) -> bool:
        """Gemini refused signatures it did not issue, and the protocol has a way on: Google's
        stand-in for "history Gemini did not produce" (ai.google.dev/gemini-api/docs/thought-signatures)."""
        caps = self.capabilities
        if not (caps.echo_tool_call_extra and caps.unsigned_call_signature and isinstance(error, BadRequest)):
            return False
        if not FOREIGN_SIGNATURE.search(error.message):
            return False
        return any(c.provider_extra for m in request.messages for c in m.tool_calls)

    def _drop_caching(self) -> bool:
        """Turn prompt caching off for this provider; False when it was off already."""
        caps = self.capabilities
        if caps.prompt_cache == "off" and not caps.send_prompt_cache_key:
            return False
        self.capabilities = dataclasses.replace(caps, prompt_cache="off", send_prompt_cache_key=False)
        return True

    async def _attempt(self, payload: dict[str, Any]) -> AsyncIterator[ModelEvent]:
        deadline = time.monotonic() + self.total_timeout
        try:
            if not self.capabilities.stream:
                for event in await self._complete_once(payload):
                    yield event
                return
            async with self._http.stream(
                "POST", self.url(), json=payload, headers=self._headers(), timeout=self._timeout()
            ) as response:
                if response.status_code >= 400 or not is_event_stream(response):
                    await response.aread()
                    for event in self._events_from_json_response(response):
                        yield event
                    return
                accumulator = self.new_accumulator()
                async for sse in iter_sse(response, deadline=deadline):
                    for event in accumulator.feed(sse.event, sse.data):
                        yield event
                    if accumulator.done:
                        break
                for event in accumulator.finish():
                    yield event
        except httpx.HTTPError as exc:
            raise map_transport_error(exc, self.idle_timeout) from exc

    async def _complete_once(self, payload: dict[str, Any]) -> list[ModelEvent]:
        try:
            async with asyncio.timeout(self.total_timeout):
                response = await self._http.post(
                    self.url(), json=payload, headers=self._headers(), timeout=self._timeout()
                )
        except TimeoutError as exc:
            raise StalledStream(
                "timed out: the response took longer than the total timeout (not retried: the provider "
                "may have billed it; raise the provider's total timeout for longer answers)"
            ) from exc
        return self._events_from_json_response(response)

    def _events_from_json_response(self, response: httpx.Response) -> list[ModelEvent]:
        if response.status_code >= 400:
            raise map_response_error(response)
        try:
            body = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise MalformedStream(
                f"expected JSON or an event stream, got {response.headers.get('content-type')!r}"
            ) from exc
        if extract_error(body) is not None:
            raise map_error(response.status_code, body, response.headers)
        if not isinstance(body, dict):
            raise MalformedStream("the response body is not a JSON object")
        return self.events_from_body(body)
