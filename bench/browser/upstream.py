"""A fake OpenAI-compatible upstream that stamps the wall-clock send time of every chunk. Not a test.

``POST /v1/chat/completions`` (stream only) answers ``tokens`` one-token chunks (" w0", " w1", ...)
with ``delay`` ms between them. Both are read from the last user message (``rid=ID delay=10
tokens=200``), so one upstream serves every cell. Per ``rid`` it keeps the time the request arrived,
the send time of every content chunk and the number of tools and messages the request carried.
``GET /stamps`` hands the records over and forgets them (the client collects after each cell).

    python -m bench.browser.upstream --port 9100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from typing import Any

_FIELD = re.compile(r"\b(rid|delay|tokens)=([\w.-]+)")
STAMPS: dict[str, dict[str, Any]] = {}


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
            return str(content or "")
    return ""


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


async def _read_body(receive) -> bytes:
    parts = []
    while True:
        message = await receive()
        parts.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(parts)


async def _json(send, status: int, value: Any) -> None:
    await send(
        {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]}
    )
    await send({"type": "http.response.body", "body": json.dumps(value).encode()})


async def app(scope, receive, send) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    received = time.time()
    path = scope["path"]
    if path == "/stamps":
        taken = dict(STAMPS)
        STAMPS.clear()
        await _json(send, 200, taken)
        return
    if path == "/v1/models":
        await _json(send, 200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
        return
    if not path.endswith("/chat/completions") or scope["method"] != "POST":
        await _json(send, 404, {"error": {"message": "not found", "type": "invalid_request_error"}})
        return
    body = json.loads(await _read_body(receive) or b"{}")
    fields = dict(_FIELD.findall(_last_user_text(body)))
    rid = fields.get("rid", f"anon-{received}")
    delay = float(fields.get("delay", 0)) / 1000
    tokens = int(fields.get("tokens", 200))
    record = {
        "recv": received,
        "sends": [],
        "tools": len(body.get("tools") or []),
        "messages": len(body.get("messages") or []),
    }
    STAMPS[rid] = record
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")],
        }
    )
    await send(
        {
            "type": "http.response.body",
            "body": _chunk({"role": "assistant", "content": ""}),
            "more_body": True,
        }
    )
    sends = record["sends"]
    for i in range(tokens):
        if delay and i:
            await asyncio.sleep(delay)
        chunk = _chunk({"content": f" w{i}"})
        sends.append(time.time())
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    tail = _chunk({}, "stop")
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = {"prompt_tokens": 10, "completion_tokens": tokens, "total_tokens": 10 + tokens}
        tail += (
            b"data: "
            + json.dumps(
                {
                    "id": "chatcmpl-bench",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": "fake-model",
                    "choices": [],
                    "usage": usage,
                }
            ).encode()
            + b"\n\n"
        )
    await send({"type": "http.response.body", "body": tail + b"data: [DONE]\n\n"})


def expected_text(tokens: int) -> str:
    return "".join(f" w{i}" for i in range(tokens))


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
