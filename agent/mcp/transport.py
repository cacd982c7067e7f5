"""Building the SDK transport for a server config, and watching it for closure.

stdio children are started through a small launcher (``python -I -S -c ...``, ``stdio_guard.py``)
that sets ``PR_SET_PDEATHSIG=SIGKILL`` for itself and the real command it starts (argv as an array,
no shell) and relays the command's stdout with a per-message size cap. The SDK's own shutdown
(close stdin, SIGTERM then SIGKILL the process group) covers a clean ``aclose()``; the death signal
covers a worker that is killed outright (SIGKILL, OOM killer), where no Python code runs at all.
Linux only: elsewhere the command is started directly.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TextIO

import anyio
import httpx2
from mcp import StdioServerParameters, stdio_client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from agent.mcp.config import McpServerConfig
from agent.mcp.stdio_guard import LAUNCHER, MAX_MESSAGE_BYTES


def stdio_parameters(config: McpServerConfig) -> StdioServerParameters:
    command, args = config.command or "", list(config.args)
    if sys.platform.startswith("linux"):
        args = ["-I", "-S", "-c", LAUNCHER, str(os.getpid()), str(MAX_MESSAGE_BYTES), command, *args]
        command = sys.executable
    return StdioServerParameters(command=command, args=args, env=dict(config.env) or None)


def session_expiry_hook(on_expired: Callable[[], None]) -> Callable[[httpx2.Response], Awaitable[None]]:
    """An httpx2 response hook calling ``on_expired()`` on a 404 to a POST that carried a session id.

    Spec 2025-11-25 ``basic/transports.mdx``, Session Management: "When a client receives HTTP 404 in
    response to a request containing an ``MCP-Session-Id``, it MUST start a new session". Seen here,
    at the HTTP layer, because the SDK reports it as a JSON-RPC error whose code depends on the body.
    """

    async def hook(response: httpx2.Response) -> None:
        request = response.request
        if response.status_code == 404 and request.method == "POST" and "mcp-session-id" in request.headers:
            on_expired()

    return hook


class MessageTooLarge(httpx2.StreamError):
    """A response body over the message cap: reading stops, the request gets a parse error."""


class _CappedBody(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, cap: int) -> None:
        self.inner, self.cap = inner, cap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self.inner:
            seen += len(chunk)
            if seen > self.cap:
                raise MessageTooLarge(f"response body over {self.cap} bytes dropped by the client")
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class CappedTransport(httpx2.AsyncBaseTransport):
    """Caps each POST response body (a JSON answer, or the SSE stream carrying one call's messages) at
    ``cap`` bytes, so a server cannot make the worker read and hold an unbounded answer (L7). The SDK
    turns the ``StreamError`` into an error answer for that request."""

    def __init__(self, cap: int = MAX_MESSAGE_BYTES) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.cap = cap

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        if request.method == "POST":
            response.stream = _CappedBody(response.stream, self.cap)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


@asynccontextmanager
async def _streamable_http(
    config: McpServerConfig, on_session_expired: Callable[[], None] | None
) -> AsyncIterator[Any]:
    # Headers (auth tokens ...) travel through our own httpx2 client; the SDK leaves its lifecycle to us.
    timeout = httpx2.Timeout(config.connect_timeout, read=max(300.0, config.call_timeout))
    hooks = {"response": [session_expiry_hook(on_session_expired)]} if on_session_expired else {}
    async with httpx2.AsyncClient(
        headers=dict(config.headers),
        timeout=timeout,
        event_hooks=hooks,
        transport=CappedTransport(),
        auth=config.auth,  # None, or an OAuth 2.1 provider (the SDK's OAuthClientProvider)
    ) as http:
        async with streamable_http_client(
            config.url or "", http_client=http, max_sse_event_size=MAX_MESSAGE_BYTES
        ) as streams:
            yield streams


def build_transport(
    config: McpServerConfig, errlog: TextIO, on_session_expired: Callable[[], None] | None = None
) -> Any:
    """The SDK transport (an async context manager yielding ``(read, write)``) for ``config``."""
    if config.transport == "stdio":
        return stdio_client(stdio_parameters(config), errlog=errlog)
    if config.transport == "http":
        return _streamable_http(config, on_session_expired)
    return sse_client(
        config.url or "",
        headers=dict(config.headers) or None,
        timeout=config.connect_timeout,
        sse_read_timeout=max(300.0, config.call_timeout),
        auth=config.auth,
    )


@asynccontextmanager
async def watched(transport: Any, on_closed: Any) -> AsyncIterator[tuple[Any, Any]]:
    """Wrap ``transport`` so that ``on_closed()`` runs as soon as its read side ends.

    The SDK only notices a dead stdio child when a request fails; relaying the read stream lets the
    pool mark the connection dead at once, so the next call restarts the server instead of failing.
    """
    async with transport as (read, write):
        send, recv = anyio.create_memory_object_stream[Any](math.inf)

        async def relay() -> None:
            try:
                async with read, send:
                    async for item in read:
                        await send.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                pass
            finally:
                on_closed()

        async with anyio.create_task_group() as tg:
            tg.start_soon(relay)
            try:
                yield recv, write
            finally:
                tg.cancel_scope.cancel()
