"""Serve a strict provider emulator (a Starlette app) over real HTTP on 127.0.0.1 for one test.

The emulators in this directory are built from the providers' documentation, not from our client:
each one answers the seed 000 §6 files scenario in its provider's wire format and rejects a
follow-up request exactly as the real API does when something it requires back is missing or
altered (documented status, error type and message; docs/providers.md lists the sources).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import socket
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import uvicorn
from starlette.responses import Response, StreamingResponse

_KEY = b"emulator-signing-key"


def seal(kind: str, payload: str, size: int = 240) -> str:
    """A deterministic opaque blob bound to ``payload``: what a provider's signature is to us."""
    digest = hmac.new(_KEY, f"{kind}\n{payload}".encode(), hashlib.sha256).digest()
    return base64.b64encode((digest * (size // len(digest) + 1))[:size]).decode()


def sealed_ok(kind: str, payload: str, blob: Any) -> bool:
    return isinstance(blob, str) and hmac.compare_digest(blob, seal(kind, payload))


def sse(events: Iterable[tuple[str | None, dict[str, Any] | str]]) -> StreamingResponse:
    async def body() -> AsyncIterator[bytes]:
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
            head = f"event: {name}\n" if name else ""
            yield f"{head}data: {text}\n\n".encode()

    return StreamingResponse(body(), media_type="text/event-stream")


def json_response(status: int, body: Any) -> Response:
    return Response(json.dumps(body, ensure_ascii=False), status_code=status, media_type="application/json")


@contextlib.asynccontextmanager
async def serve(app: Any) -> AsyncIterator[str]:
    """The app on a random local port; yields ``http://127.0.0.1:<port>``."""
    import asyncio

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # already listening: clients queue in the backlog, no waiting for "started"
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()


@contextlib.contextmanager
def serve_in_thread(app: Any) -> Iterator[str]:
    """The app in a thread of its own (for tests whose client is another process, a worker)."""
    import threading

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
