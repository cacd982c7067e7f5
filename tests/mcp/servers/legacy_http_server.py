"""A hand-written Streamable HTTP MCP server (2025-11-25, sessions) that can forget its sessions.

Hosted servers expire idle sessions and then answer any request carrying the old ``Mcp-Session-Id``
with HTTP 404 (spec ``basic/transports.mdx``, Session Management). This server does exactly that
when told to, so the client's recovery can be tested against a real HTTP exchange:

* ``POST /admin/expire`` forgets every session (``?always=1``: and every later one at once);
* ``GET /admin/stats`` tells how many sessions were opened and how often each tool really ran.

``connect_account`` answers on an SSE stream: first an ``elicitation/create`` request (URL mode,
spec 2025-11-25) for a link to ``/connect`` on this server, then, once the client has answered it,
the tool result naming the user's action. ``GET /connect`` counts its visits (a client must never
fetch the link itself).

``--style ts`` answers an expired session like the TypeScript SDK does (404 with a JSON-RPC body,
code -32001 "Session not found"); ``--style bare`` sends a 404 with no body.

Usage: python expiring_http_server.py --port N [--style ts|bare]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from collections import Counter

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

PROTOCOL = "2025-11-25"
TOOLS = [
    {
        "name": "count",
        "description": "Add one to a counter kept by the server and return the new value (a side effect).",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "connect_account",
        "description": "Connect the user's Example account (the user finishes it in their browser).",
        "inputSchema": {"type": "object", "properties": {}},
    },
]


class State:
    def __init__(self, style: str) -> None:
        self.style = style
        self.sessions: set[str] = set()
        self.opened = 0
        self.ran: Counter[str] = Counter()
        self.counter = 0
        self.always = False
        self.port = 0
        self.waiting: dict[str, asyncio.Future] = {}  # our elicitation request id -> the answer
        self.visits = 0


def rpc_result(request_id: object, result: dict, **headers: str) -> JSONResponse:
    return JSONResponse({"jsonrpc": "2.0", "id": request_id, "result": result}, headers=headers)


def rpc_error(status: int, code: int, message: str, request_id: object = None) -> JSONResponse:
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status)


def build_app(state: State) -> Starlette:
    def session_gone() -> Response:
        if state.style == "bare":
            return Response(status_code=404)
        return rpc_error(404, -32001, "Session not found")

    async def mcp(request: Request) -> Response:
        if request.method == "GET":
            return Response(status_code=405)  # no server-initiated stream
        session = request.headers.get("mcp-session-id")
        if request.method == "DELETE":
            if session in state.sessions:
                state.sessions.discard(session)
                return Response(status_code=200)
            return session_gone()
        message = await request.json()
        method, request_id = message.get("method"), message.get("id")
        if method == "server/discover":  # a 2025-11-25 server does not know it (as the TS SDK answers)
            return rpc_error(400, -32000, "Bad Request: Server not initialized")
        if method == "initialize":
            session = uuid.uuid4().hex
            state.sessions.add(session)
            state.opened += 1
            result = {
                "protocolVersion": PROTOCOL,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "expiring", "version": "1.0"},
            }
            return rpc_result(request_id, result, **{"mcp-session-id": session})
        if state.always:
            state.sessions.clear()
        if session not in state.sessions:
            return session_gone() if session else rpc_error(400, -32000, "Bad Request: No valid session ID")
        if method is None and request_id in state.waiting:  # the client's answer to our request
            state.waiting.pop(request_id).set_result(message.get("result") or {})
            return Response(status_code=202)
        if request_id is None:  # a notification
            return Response(status_code=202)
        if method == "tools/list":
            return rpc_result(request_id, {"tools": TOOLS})
        if method == "tools/call" and message["params"]["name"] == "connect_account":
            state.ran["connect_account"] += 1
            return StreamingResponse(elicit_then_answer(request_id), media_type="text/event-stream")
        if method == "tools/call":
            name = message["params"]["name"]
            state.ran[name] += 1
            state.counter += 1
            text = f'{{"count": {state.counter}}}'
            return rpc_result(request_id, {"content": [{"type": "text", "text": text}], "isError": False})
        return rpc_error(200, -32601, f"Method not found: {method}", request_id)

    async def elicit_then_answer(request_id: object):
        ask_id = f"elicit-{uuid.uuid4().hex[:8]}"
        answer: asyncio.Future = asyncio.get_running_loop().create_future()
        state.waiting[ask_id] = answer
        params = {
            "mode": "url",
            "message": "Connect your Example account to continue.",
            "url": f"http://127.0.0.1:{state.port}/connect?flow={ask_id}",
            "elicitationId": ask_id,
        }
        ask = {"jsonrpc": "2.0", "id": ask_id, "method": "elicitation/create", "params": params}
        yield f"event: message\ndata: {json.dumps(ask)}\n\n".encode()
        result = await answer
        text = json.dumps({"action": result.get("action")})
        done = {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}}
        yield f"event: message\ndata: {json.dumps(done)}\n\n".encode()

    async def connect(_: Request) -> Response:
        state.visits += 1
        return HTMLResponse("<h1>Example account connected</h1>")

    async def expire(request: Request) -> Response:
        state.sessions.clear()
        state.always = request.query_params.get("always") == "1"
        return JSONResponse({"expired": True})

    async def stats(_: Request) -> Response:
        body = {
            "opened": state.opened,
            "ran": dict(state.ran),
            "live": len(state.sessions),
            "visits": state.visits,
        }
        return JSONResponse(body)

    return Starlette(
        routes=[
            Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]),
            Route("/admin/expire", expire, methods=["POST"]),
            Route("/admin/stats", stats, methods=["GET"]),
            Route("/connect", connect, methods=["GET"]),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--style", choices=("ts", "bare"), default="ts")
    args = parser.parse_args()
    state = State(args.style)
    state.port = args.port
    uvicorn.run(build_app(state), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
