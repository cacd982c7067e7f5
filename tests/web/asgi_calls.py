"""Requests made straight to an ASGI handler, as daphne makes them: a scope, the body in one message,
then a client that stays connected (or leaves when told)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Answer:
    status: int | None = None
    headers: dict[bytes, bytes] = field(default_factory=dict)
    pieces: list[bytes] = field(default_factory=list)

    @property
    def body(self) -> bytes:
        return b"".join(self.pieces)


def scope_for(path: str, method: str = "GET", headers: list[tuple[bytes, bytes]] | None = None) -> dict:
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "headers": [(b"host", b"testserver"), *(headers or [])],
        "client": ("127.0.0.1", 40000), "server": ("testserver", 80),
    }


async def call(
    handler: Any,
    scope: dict,
    body: bytes = b"",
    on_first_piece: Callable[[], None] | None = None,
    leave: asyncio.Event | None = None,
) -> Answer:
    """One request; ``on_first_piece`` runs when the first piece of the body is handed to the
    server; the client disconnects once ``leave`` is set (never, without it)."""
    answer = Answer()
    requested = False

    async def receive() -> dict:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": body, "more_body": False}
        await (leave or asyncio.Event()).wait()
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            answer.status = message["status"]
            answer.headers = dict(message.get("headers", []))
        elif message.get("body"):
            if not answer.pieces and on_first_piece is not None:
                on_first_piece()
            answer.pieces.append(message["body"])

    await handler(scope, receive, send)
    return answer
