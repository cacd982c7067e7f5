"""The demo model in its own process, with the send time of every streamed chunk recorded.

An ASGI wrapper around ``demo.model.create_app`` (unchanged): it timestamps each SSE body chunk
as it is handed to the server and keeps, per request (keyed by the last user message), the list of
``(time.time(), content)`` of the content chunks. ``GET /stamps`` returns them. The bench compares
these send times with the websocket receive times: both clocks are this machine's wall clock.

    python -m bench.runs.model_server --port 8711 --tps 20
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from demo.model import DemoModelSettings, create_app


def user_key(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return message["content"]
    return ""


class Stamped:
    def __init__(self, tps: float) -> None:
        self.inner = create_app(DemoModelSettings(tokens_per_second=tps))
        self.stamps: dict[str, list[list[Any]]] = {}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["path"] == "/stamps":
            body = json.dumps(self.stamps).encode()
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"json")]}
            )
            await send({"type": "http.response.body", "body": body})
            return
        if scope["type"] != "http" or not scope["path"].endswith("/chat/completions"):
            await self.inner(scope, receive, send)
            return
        chunks: list[bytes] = []

        async def buffered():
            message = await receive()
            chunks.append(message.get("body", b""))
            return message

        key: list[str] = []

        async def stamping(message):
            if message["type"] == "http.response.body" and message.get("body"):
                if not key:
                    key.append(user_key(json.loads(b"".join(chunks) or b"{}")))
                content = _content(message["body"])
                if content:
                    self.stamps.setdefault(key[0], []).append([time.time(), content])
            await send(message)

        await self.inner(scope, buffered, stamping)


def _content(raw: bytes) -> str:
    out = []
    for line in raw.decode("utf-8", "replace").splitlines():
        if line.startswith("data: {"):
            chunk = json.loads(line[6:])
            for choice in chunk.get("choices") or []:
                if choice.get("index") == 0 and (choice.get("delta") or {}).get("content"):
                    out.append(choice["delta"]["content"])
    return "".join(out)


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tps", type=float, default=20.0)
    args = parser.parse_args()
    uvicorn.run(Stamped(args.tps), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
