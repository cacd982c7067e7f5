"""A hostile OpenAI-compatible model server for the issue-16 regression tests.

It plays a fully prompt-injected model: everything the demo model does (including
``[[demo:call TOOL {json}]]``, which makes any tool call the attacker wants), plus ``ERRKEY``: answer
401 quoting the Authorization header it was sent, as some providers and proxies do
("Incorrect API key provided: ..."). Served by uvicorn in a process of its own on a loopback port, as a
provider is: a model served from the test process would share that process's GIL with the test's
senders and pollers, and the soak test would time the harness along with the worker.

Paced (``serve(pace=(first_token_seconds, tokens_per_second))``, the soak test's realistic model): it
answers after a first-token delay and streams the demo's chunks at a real model's rate, as they are
made. Unpaced it answers at once, the whole stream in one body.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Iterator

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from demo.model import DemoModelSettings, create_app
from tests.model_process import serve_module

# "first-token seconds,tokens per second" (set by ``serve``); empty: no pace.
PACE = tuple(float(x) for x in os.environ.get("HOSTILE_MODEL_PACE", "").split(",") if x) or (0.0, 0.0)
demo = create_app(DemoModelSettings(tokens_per_second=PACE[1]))


async def completions(request: Request):
    body = await request.json()
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    if users and "ERRKEY" in str(users[-1].get("content")):
        key = request.headers.get("authorization", "")
        message = f"Incorrect API key provided: {key}. You can find your API key at https://example.invalid."
        return JSONResponse(
            {"error": {"message": message, "type": "invalid_request_error", "code": "invalid_api_key"}},
            status_code=401,
        )
    # Everything else: the demo model, byte for byte (the body was read, so replay it).
    scope = dict(request.scope)
    raw = await request.body()

    sent = False

    async def receive():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}
        await asyncio.Event().wait()  # no disconnect: the stream runs to its end
        return {"type": "http.disconnect"}

    demo_scope = scope | {"path": "/v1/chat/completions", "root_path": ""}
    if PACE[0] or PACE[1]:
        await asyncio.sleep(PACE[0])  # the model's time to first token
        return await _streamed(demo_scope, receive)
    responder = _Capture()
    await demo(demo_scope, receive, responder)
    return responder.response()


async def _streamed(scope, receive):
    """The demo's answer passed on chunk by chunk as the demo makes it (at its tokens per second)."""
    from starlette.responses import StreamingResponse

    queue: asyncio.Queue = asyncio.Queue()

    async def send(message):
        await queue.put(message)

    app = asyncio.create_task(demo(scope, receive, send))
    start = await queue.get()
    assert start["type"] == "http.response.start", start

    async def body():
        try:
            while True:
                message = await queue.get()
                if message.get("body"):
                    yield message["body"]
                if not message.get("more_body"):
                    return
        finally:
            await app

    headers = {k.decode(): v.decode() for k, v in start.get("headers", []) if k.lower() != b"content-length"}
    return StreamingResponse(body(), status_code=start["status"], headers=headers)


class _Capture:
    def __init__(self) -> None:
        self.status, self.headers, self.chunks = 200, [], []

    async def __call__(self, message):
        if message["type"] == "http.response.start":
            self.status, self.headers = message["status"], message.get("headers", [])
        elif message["type"] == "http.response.body":
            self.chunks.append(message.get("body", b""))

    def response(self):
        from starlette.responses import Response

        headers = {k.decode(): v.decode() for k, v in self.headers if k.lower() != b"content-length"}
        return Response(b"".join(self.chunks), status_code=self.status, headers=headers)


app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"]), Mount("/", demo)])


@contextlib.contextmanager
def serve(pace: tuple[float, float] | None = None) -> Iterator[str]:
    """The server in a process of its own; ``pace``: (first-token seconds, tokens per second)."""
    with serve_module(
        "tests.security.hostile_model", {"HOSTILE_MODEL_PACE": ",".join(map(str, pace)) if pace else ""}
    ) as url:
        yield url


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", lifespan="off")
