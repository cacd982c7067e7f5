"""A hostile OpenAI-compatible model server for the issue-16 regression tests.

It plays a fully prompt-injected model: everything the demo model does (including
``[[demo:call TOOL {json}]]``, which makes any tool call the attacker wants), plus ``ERRKEY``: answer
401 quoting the Authorization header it was sent, as some providers and proxies do
("Incorrect API key provided: ..."). Served by uvicorn in a process of its own on a loopback port, as a
provider is: a model served from the test process would share that process's GIL with the test's
senders and pollers, and the soak test would time the harness along with the worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from demo.model import DemoModelSettings, create_app

demo = create_app(DemoModelSettings(tokens_per_second=0))


async def completions(request: Request):
    body = await request.json()
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    if users and "ERRKEY" in str(users[-1].get("content")):
        key = request.headers.get("authorization", "")
        message = f"Incorrect API key provided: {key}. You can find your API key at https://example.invalid."
        return JSONResponse({"error": {"message": message, "type": "invalid_request_error",
                                       "code": "invalid_api_key"}}, status_code=401)
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

    responder = _Capture()
    await demo(scope | {"path": "/v1/chat/completions", "root_path": ""}, receive, responder)
    return responder.response()


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
def serve() -> Iterator[str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-m", "tests.security.hostile_model", str(port)], cwd=root)
    try:
        deadline = time.monotonic() + 20
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)  # readiness poll of a child process
        else:
            raise AssertionError("the hostile model did not start")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", lifespan="off")
