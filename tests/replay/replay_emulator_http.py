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


@contextlib.contextmanager
def signing_key(key: bytes) -> Iterator[None]:
    """Emulators seal and verify with another key inside: another account or endpoint of the same
    provider, for which every earlier signature is foreign."""
    global _KEY
    previous, _KEY = _KEY, key
    try:
        yield
    finally:
        _KEY = previous


def seal(kind: str, payload: str, size: int = 240) -> str:
    """A deterministic opaque blob bound to ``payload``: what a provider's signature is to us."""
    digest = hmac.new(_KEY, f"{kind}\n{payload}".encode(), hashlib.sha256).digest()
    return base64.b64encode((digest * (size // len(digest) + 1))[:size]).decode()


def sealed_ok(kind: str, payload: str, blob: Any) -> bool:
    return isinstance(blob, str) and hmac.compare_digest(blob, seal(kind, payload))


def tokens_of(piece: Any) -> int:
    """Roughly what a tokenizer counts for a JSON piece of the prompt (markers never count)."""
    return max(1, len(json.dumps(_unmarked(piece), ensure_ascii=False, sort_keys=True)) // 3)


def _unmarked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def _prefix_keys(pieces: list[Any]) -> list[str]:
    """keys[n] identifies pieces[:n] as content (cache markers excluded: they move every round)."""
    running = hashlib.sha256()
    keys = [running.hexdigest()]
    for piece in pieces:
        running.update(json.dumps(_unmarked(piece), ensure_ascii=False, sort_keys=True).encode())
        keys.append(running.hexdigest())
    return keys


class PrefixCache:
    """A provider's prompt cache, as the caching pages describe it (docs/providers.md, "Prompt caching").

    The prompt is a list of pieces in prefix order (tools, system, messages or their blocks).
    ``automatic`` (OpenAI, DeepSeek, Gemini implicit caching): every prefix a request sent is cached,
    a later request reads the longest one it starts with, and nothing is billed as a write.
    ``breakpoints`` (Anthropic): only the prefixes that end at a block carrying ``cache_control`` are
    written; a later request reads the longest written prefix ending at one of its breakpoints or up
    to 20 blocks before it. Returns (read, written, total) tokens.
    """

    LOOKBACK = 20

    def __init__(self) -> None:
        self.stored: set[str] = set()

    def automatic(self, pieces: list[Any]) -> tuple[int, int, int]:
        keys, sizes = _prefix_keys(pieces), [tokens_of(p) for p in pieces]
        hit = max((n for n in range(len(pieces) + 1) if keys[n] in self.stored), default=0)
        self.stored.update(keys[1:])
        return sum(sizes[:hit]), 0, sum(sizes)

    def breakpoints(self, pieces: list[Any]) -> tuple[int, int, int]:
        keys, sizes = _prefix_keys(pieces), [tokens_of(p) for p in pieces]
        ends = [n + 1 for n, p in enumerate(pieces) if isinstance(p, dict) and "cache_control" in p]
        hit = 0
        for end in ends:
            for n in range(end, max(end - self.LOOKBACK, 0) - 1, -1):
                if n and keys[n] in self.stored:
                    hit = max(hit, n)
                    break
        last = max(ends, default=0)
        written = sum(sizes[hit:last]) if last > hit else 0
        self.stored.update(keys[n] for n in ends)
        return sum(sizes[:hit]), written, sum(sizes)


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
