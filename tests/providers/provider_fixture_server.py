"""A tiny HTTP/1.1 server on 127.0.0.1 that replays recorded responses byte for byte.

Built on ``asyncio.start_server`` so it runs in the test's own event loop: no threads, no sleeps.
Each reply is sent with chunked transfer encoding, one HTTP chunk per piece, the socket written
and the loop yielded between pieces, so the client really sees the byte boundaries we choose
(including ones inside a UTF-8 sequence). A reply can stall on an ``asyncio.Event`` before a given
piece: that is how idle timeouts are tested without sleeping.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    pieces: list[bytes]
    status: int = 200
    headers: dict[str, str] = field(
        default_factory=lambda: {"content-type": "text/event-stream; charset=utf-8"}
    )
    # Wait for this event before sending piece number ``stall_before`` (len(pieces) = before the end).
    stall: asyncio.Event | None = None
    stall_before: int = 0

    @classmethod
    def sse(cls, body: bytes, *, split_seed: int | None = None, **kwargs: Any) -> Reply:
        pieces = [body] if split_seed is None else split_random(body, split_seed)
        return cls(pieces, **kwargs)

    @classmethod
    def json(cls, status: int, body: Any, headers: dict[str, str] | None = None) -> Reply:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return cls([data], status=status, headers={"content-type": "application/json", **(headers or {})})


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def split_random(data: bytes, seed: int, max_piece: int = 48) -> list[bytes]:
    """Cut at random byte offsets, plus inside every multi-byte UTF-8 sequence."""
    rng = random.Random(seed)
    cuts = {i for i in range(1, len(data)) if data[i] & 0xC0 == 0x80}  # continuation bytes
    position = 0
    while position < len(data):
        position += rng.randint(1, max_piece)
        cuts.add(position)
    edges = [0, *sorted(c for c in cuts if 0 < c < len(data)), len(data)]
    return [data[a:b] for a, b in zip(edges, edges[1:], strict=False)]


class FixtureServer:
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Recorded] = []
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _read_request(self, reader: asyncio.StreamReader) -> Recorded | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        return Recorded(method, path, headers, body)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await self._read_request(reader)
            if request is None:
                return
            self.requests.append(request)
            reply = (
                self.replies.pop(0)
                if self.replies
                else Reply.json(500, {"error": {"message": "no reply queued"}})
            )
            await self._send(reply, writer)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _send(self, reply: Reply, writer: asyncio.StreamWriter) -> None:
        head = [f"HTTP/1.1 {reply.status} X"]
        head += [f"{k}: {v}" for k, v in reply.headers.items()]
        head += ["transfer-encoding: chunked", "connection: close", "", ""]
        writer.write("\r\n".join(head).encode("latin-1"))
        await writer.drain()
        for number, piece in enumerate(reply.pieces):
            if reply.stall is not None and number == reply.stall_before:
                await reply.stall.wait()
            if piece:
                writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                await writer.drain()
                await asyncio.sleep(0)  # let the client read this piece on its own
        if reply.stall is not None and reply.stall_before >= len(reply.pieces):
            await reply.stall.wait()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
