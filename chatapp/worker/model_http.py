"""The worker's HTTP client for model providers: httpx's API over aiohttp's connections.

Reading a streamed answer through httpx's own transport (httpcore on anyio) cost about twice the CPU
per token of aiohttp's reader: anyio pauses and resumes the socket's reading around every chunk (two
``epoll_ctl`` calls a token), which was the largest item of a worker carrying 200 streams
(docs/performance.md, session 11). ``httpx-aiohttp`` (by httpcore's maintainer; the OpenAI SDK's
``DefaultAioHttpClient``) keeps every httpx API the providers use (``stream``, ``Timeout``,
``Limits``, proxies from the environment) and hands the socket work to aiohttp.

Its exception mapping names some failures differently from httpx's own transport (a refused
connection and a server that hung up both come out as ``ConnectTimeout``; an error it does not know
escapes as aiohttp's own). ``Remapped`` raises, for each failure, the httpx exception httpx's own
transport raises for it, so ``agent/providers/error_map.py`` tells users the same thing either way,
and bounds what aiohttp leaves unbounded: writing the request (``_sending_bound``).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any

import aiohttp
import httpx
from httpx_aiohttp import HttpxAiohttpClient
from httpx_aiohttp.transport import AiohttpTransport

# aiohttp's failure -> what httpcore raises for the same failure. Most specific first: the first
# class the failure is an instance of decides.
_EQUIVALENT: tuple[tuple[type[BaseException], type[httpx.TransportError]], ...] = (
    (aiohttp.ClientProxyConnectionError, httpx.ProxyError),
    (aiohttp.ClientHttpProxyError, httpx.ProxyError),
    (aiohttp.ConnectionTimeoutError, httpx.ConnectTimeout),
    (aiohttp.SocketTimeoutError, httpx.ReadTimeout),
    (aiohttp.ServerTimeoutError, httpx.ReadTimeout),
    (aiohttp.ClientConnectorError, httpx.ConnectError),
    # The server closed the connection before the response, or in the middle of its body.
    (aiohttp.ServerDisconnectedError, httpx.RemoteProtocolError),
    (aiohttp.ClientPayloadError, httpx.RemoteProtocolError),
    (aiohttp.ClientResponseError, httpx.RemoteProtocolError),
    (aiohttp.InvalidURL, httpx.UnsupportedProtocol),
    (aiohttp.ClientOSError, httpx.ReadError),
    (aiohttp.ClientError, httpx.TransportError),
    (TimeoutError, httpx.TimeoutException),
)


def as_httpx(exc: BaseException, request: httpx.Request) -> BaseException:
    """The httpx exception httpx's own transport raises for ``exc`` (aiohttp's, or httpx-aiohttp's
    mapping of it); ``exc`` itself when it is none of them."""
    cause = exc.__cause__ if isinstance(exc, httpx.HTTPError) and exc.__cause__ is not None else exc
    for failure, equivalent in _EQUIVALENT:
        if isinstance(cause, failure):
            return equivalent(str(cause) or type(cause).__name__, request=request)
    return exc


class Remapped(httpx.AsyncBaseTransport):
    """A transport around httpx-aiohttp's, raising httpx's own exceptions (``as_httpx``)."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        bound = _sending_bound(request)
        try:
            async with asyncio.timeout(bound):
                response = await self.inner.handle_async_request(request)
        except (httpx.HTTPError, aiohttp.ClientError) as exc:
            raise as_httpx(exc, request) from exc
        except TimeoutError as exc:
            if isinstance(exc, aiohttp.ServerTimeoutError) or bound is None:  # aiohttp's own
                raise as_httpx(exc, request) from exc
            raise httpx.WriteTimeout(f"the request was not sent within {bound:g} s", request=request) from exc
        response.stream = _RemappedStream(response.stream, request)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def _sending_bound(request: httpx.Request) -> float | None:
    """aiohttp bounds connecting and each read but not writing the request: a server that accepts the
    connection and never reads the body would hold the call for ever (httpx's own transport gives up
    after its write timeout). Connecting, writing and waiting for the response's head together get at
    most the sum of httpx's three timeouts: past it, the writing is what overran (aiohttp's own
    connect and read timeouts would have fired first)."""
    timeout = request.extensions.get("timeout", {})
    parts = [timeout.get("connect"), timeout.get("write"), timeout.get("read")]
    return sum(parts) if all(part is not None for part in parts) else None


class _RemappedStream(httpx.AsyncByteStream):
    def __init__(self, inner: Any, request: httpx.Request) -> None:
        self.inner, self.request = inner, request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.inner:
                yield chunk
        except (httpx.HTTPError, aiohttp.ClientError, TimeoutError) as exc:
            raise as_httpx(exc, self.request) from exc

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        except (httpx.HTTPError, aiohttp.ClientError, TimeoutError) as exc:
            raise as_httpx(exc, self.request) from exc


class ModelClient(HttpxAiohttpClient):
    """``httpx.AsyncClient`` whose transports (the direct one and those of environment proxies) are
    httpx-aiohttp's, ``Remapped``.

    It keeps no cookies. One client serves every user's runs in a worker: a provider's (or a gateway's)
    ``Set-Cookie`` answering one user's request would otherwise ride along with everyone's later
    requests to that host, in httpx's jar and again in aiohttp's session jar.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cookies = CookieJar(DefaultCookiePolicy(allowed_domains=[]))  # accepts and sends none

    def _init_transport(self, *args: Any, **kwargs: Any) -> httpx.AsyncBaseTransport:
        if kwargs.get("transport") is not None:
            return kwargs["transport"]
        return Remapped(_without_cookies(super()._init_transport(*args, **kwargs)))

    def _init_proxy_transport(self, *args: Any, **kwargs: Any) -> httpx.AsyncBaseTransport:
        return Remapped(_without_cookies(super()._init_proxy_transport(*args, **kwargs)))


def _without_cookies(transport: httpx.AsyncBaseTransport) -> httpx.AsyncBaseTransport:
    """httpx-aiohttp builds its ``aiohttp.ClientSession`` at the first request, with aiohttp's default
    jar; it builds ours instead (``_session``)."""
    if isinstance(transport, AiohttpTransport) and transport.client is None and not transport.uds:
        transport.client = functools.partial(_session, transport)
    return transport


def _session(transport: AiohttpTransport) -> aiohttp.ClientSession:
    """The session ``AiohttpTransport.get_client`` builds (same connector settings), keeping no cookie."""
    limits = transport.limits
    limit = {"limit": limits.max_connections} if limits.max_connections is not None else {}
    connector = aiohttp.TCPConnector(
        keepalive_timeout=limits.keepalive_expiry,
        ssl=transport.ssl_context,
        local_addr=(transport.local_address, 0) if transport.local_address else None,
        **limit,  # type: ignore[arg-type]
    )
    return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())
