"""The worker's model client (httpx over aiohttp, ``chatapp/worker/model_http.py``) behaves as httpx's
own client does: a stream's chunks arrive as they are sent, and each failure is the httpx exception
httpx's own transport raises for it (so ``error_map`` tells users the same thing). Every case runs
against a real socket server of the test's own, with both clients."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx
import pytest

from agent.providers.error_map import map_transport_error
from agent.providers.errors import StalledStream, StreamEndedEarly, TransientUpstream
from chatapp.worker.model_http import ModelClient, Remapped

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"


@asynccontextmanager
async def server(handler: Handler) -> AsyncIterator[str]:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        try:
            await handler(reader, writer)
        finally:
            writer.close()

    srv = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1/chat/completions"
    finally:
        srv.close()


def clients() -> list[httpx.AsyncClient]:
    timeout = httpx.Timeout(5.0, read=0.5)
    return [ModelClient(timeout=timeout), httpx.AsyncClient(timeout=timeout)]


async def failure(url: str) -> tuple[type[BaseException], type[BaseException]]:
    """The exception each client raises reading ``url`` to its end: (ours, httpx's own)."""
    raised = []
    for client in clients():
        async with client:
            with pytest.raises(httpx.HTTPError) as caught:
                async with client.stream("POST", url, json={"stream": True}) as response:
                    async for _ in response.aiter_bytes():
                        pass
            raised.append(type(caught.value))
    return raised[0], raised[1]


async def test_chunks_arrive_as_they_are_sent():
    first_read = asyncio.Event()

    async def handler(reader, writer):
        writer.write(HEAD + b"transfer-encoding: chunked\r\n\r\n")
        writer.write(b"5\r\ndata1\r\n")
        await writer.drain()
        await asyncio.wait_for(first_read.wait(), 5)  # the second chunk only once the first was read
        writer.write(b"5\r\ndata2\r\n0\r\n\r\n")
        await writer.drain()

    async with server(handler) as url, ModelClient(timeout=5) as client:
        async with client.stream("POST", url, json={}) as response:
            seen = []
            async for chunk in response.aiter_bytes():
                seen.append(chunk)
                first_read.set()
    assert b"".join(seen) == b"data1data2" and len(seen) == 2


async def test_a_refused_connection_is_a_connect_error_as_with_httpx():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again when the block ends: nothing listens there
    ours, theirs = await failure(f"http://127.0.0.1:{port}/v1")
    assert ours is theirs is httpx.ConnectError
    assert isinstance(map_transport_error(ours("x"), 1.0), TransientUpstream)


async def test_a_body_cut_short_is_a_premature_end_as_with_httpx():
    async def handler(reader, writer):
        writer.write(HEAD + b"content-length: 1000\r\n\r\ndata: {}\n\n")
        await writer.drain()

    async with server(handler) as url:
        ours, theirs = await failure(url)
    assert ours is theirs is httpx.RemoteProtocolError
    assert isinstance(map_transport_error(ours("x"), 1.0), StreamEndedEarly)


async def test_a_server_that_hangs_up_before_answering_is_a_protocol_error_as_with_httpx():
    async def handler(reader, writer):
        return None  # closes without a byte

    async with server(handler) as url:
        ours, theirs = await failure(url)
    assert ours is theirs is httpx.RemoteProtocolError


async def test_a_silent_stream_is_a_read_timeout_as_with_httpx():
    async def handler(reader, writer):
        writer.write(HEAD + b"transfer-encoding: chunked\r\n\r\n5\r\ndata1\r\n")
        await writer.drain()
        await asyncio.sleep(3)  # longer than the clients' read timeout (0.5 s)

    async with server(handler) as url:
        ours, theirs = await failure(url)
    assert ours is theirs is httpx.ReadTimeout
    assert isinstance(map_transport_error(ours("x"), 0.5), StalledStream)


def test_proxies_from_the_environment_go_through_the_same_transport(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    client = ModelClient()
    assert isinstance(client._transport, Remapped)
    proxied = [t for t in client._mounts.values() if t is not None]
    assert proxied and all(isinstance(t, Remapped) for t in proxied)


async def test_a_server_that_never_reads_the_request_is_a_write_timeout_as_with_httpx():
    """aiohttp bounds no write: without the transport's own bound the call waited for ever."""
    connected = []

    async def never_reads(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connected.append(writer)  # kept open, never read: the client's sends fill the buffers

    srv = await asyncio.start_server(never_reads, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}/v1/chat/completions"
    body = b"x" * (64 * 2**20)  # more than the kernel's socket buffers take in
    raised = []
    try:
        for client in (
            ModelClient(timeout=httpx.Timeout(0.5)),
            httpx.AsyncClient(timeout=httpx.Timeout(0.5)),
        ):
            async with client:
                with pytest.raises(httpx.TimeoutException) as caught:
                    await asyncio.wait_for(client.post(url, content=body), timeout=20)
                raised.append(type(caught.value))
    finally:
        srv.close()
        for writer in connected:
            writer.close()
    assert raised == [httpx.WriteTimeout, httpx.WriteTimeout]


async def _cookies_sent_back(client: httpx.AsyncClient) -> list[str]:
    """Two requests to a host that sets a cookie on the first: the Cookie header of each, as received."""
    received: list[str] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        received.append(next((h.split(":", 1)[1].strip() for h in head if h.lower().startswith("cookie:")), ""))
        body = b"{}"
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
            + b"set-cookie: gateway_session=user-a; Path=/\r\n"
            + b"content-length: %d\r\n\r\n" % len(body)
            + body
        )
        await writer.drain()
        writer.close()

    srv = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    try:
        async with client:
            for _ in range(2):  # "localhost", not an address: aiohttp's own jar keeps no cookie of an IP
                (await client.post(f"http://localhost:{port}/v1/chat/completions", json={})).raise_for_status()
    finally:
        srv.close()
    return received


async def test_a_cookie_set_for_one_request_is_not_sent_with_the_next():
    """One client serves every user's runs in a worker: a gateway's cookie answering one user's request
    must not ride along with another's (both httpx's jar and aiohttp's session jar keep none)."""
    from httpx_aiohttp import HttpxAiohttpClient

    assert await _cookies_sent_back(HttpxAiohttpClient()) == ["", "gateway_session=user-a"]  # what it fixes
    assert await _cookies_sent_back(httpx.AsyncClient()) == ["", "gateway_session=user-a"]
    assert await _cookies_sent_back(ModelClient()) == ["", ""]
