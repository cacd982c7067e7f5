"""A model that floods: thousands of one-character chunks a second (issue 15, "bad input").

An OpenAI-compatible ``POST /v1/chat/completions`` (stream only). The last user message says what to
answer:

- ``flood chunks=20000 rate=10000``: 20,000 chunks of one character each (the digits in turn), at
  10,000 a second, each its own SSE event and its own write;
- ``paced tokens=100 rate=50``: 100 chunks ``|<send time, ms since the epoch>`` at 50 a second, so
  whoever reads them can tell each token's lag from the wall clock (one host, one clock).

``GET /stats`` hands over, per answer, how many chunks were written and over how long (a flood that
the reader throttled through TCP shows there as a lower rate). Served by uvicorn in a process of its
own (``serve``), as a provider is: in the test's process it would share a GIL with the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
import time
from collections.abc import Iterator
from typing import Any

from tests.model_process import serve_module

_FIELD = re.compile(r"\b(chunks|tokens|rate)=(\d+)")
STATS: list[dict[str, Any]] = []


def expected_flood(chunks: int) -> str:
    """The text a flood of ``chunks`` chunks adds up to."""
    return "".join(str(i % 10) for i in range(chunks))


def sse_event(delta: dict[str, Any], finish: str | None = None) -> bytes:
    """One chunk of a Chat Completions stream as its Server-Sent Event."""
    body = {
        "id": "chatcmpl-flood",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "flood",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
            return str(content or "")
    return ""


async def _read_body(receive) -> bytes:
    parts = []
    while True:
        message = await receive()
        parts.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(parts)


async def _stream(send, pieces: int, rate: float, piece) -> dict[str, Any]:
    """Write ``pieces`` content chunks at ``rate`` a second, each its own write."""
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]}
    )
    await send({"type": "http.response.body", "body": sse_event({"role": "assistant"}), "more_body": True})
    started = time.monotonic()
    for i in range(pieces):
        ahead = started + i / rate - time.monotonic()
        if ahead > 0.001:  # the event loop's timers are ~1 ms; finer pacing comes from the batches
            await asyncio.sleep(ahead)
        await send({"type": "http.response.body", "body": sse_event({"content": piece(i)}), "more_body": True})
    took = time.monotonic() - started
    await send({"type": "http.response.body", "body": sse_event({}, "stop"), "more_body": True})
    await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})
    return {"chunks": pieces, "seconds": took}


async def app(scope, receive, send) -> None:
    if scope["type"] == "lifespan":
        return
    if scope["method"] == "GET" and scope["path"] == "/stats":
        body = json.dumps(STATS).encode()
        STATS.clear()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})
        return
    body = json.loads(await _read_body(receive) or b"{}")
    text = _last_user_text(body)
    fields = {k: int(v) for k, v in _FIELD.findall(text)}
    if text.startswith("flood"):
        stats = await _stream(
            send, fields.get("chunks", 20_000), fields.get("rate", 10_000), lambda i: str(i % 10)
        )
    else:
        stats = await _stream(
            send, fields.get("tokens", 100), fields.get("rate", 50), lambda i: f"|{time.time() * 1000:.1f}"
        )
    STATS.append({"kind": text.split(" ", 1)[0], **stats})


@contextlib.contextmanager
def serve() -> Iterator[str]:
    """The model in a process of its own; yields its base URL (``.../v1``)."""
    with serve_module("tests.integration.flood_model") as url:
        yield url


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", lifespan="off")
