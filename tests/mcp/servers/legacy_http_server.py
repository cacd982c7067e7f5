"""A hand-written Streamable HTTP MCP server (2025-11-25, sessions) that can forget its sessions.

Hosted servers expire idle sessions and then answer any request carrying the old ``Mcp-Session-Id``
with HTTP 404 (spec ``basic/transports.mdx``, Session Management). This server does exactly that
when told to, so the client's recovery can be tested against a real HTTP exchange:

* ``POST /admin/expire`` forgets every session (``?always=1``: and every later one at once);
* ``GET /admin/stats`` tells how many sessions were opened and how often each tool really ran.

``--style ts`` answers an expired session like the TypeScript SDK does (404 with a JSON-RPC body,
code -32001 "Session not found"); ``--style bare`` sends a 404 with no body.

Usage: python expiring_http_server.py --port N [--style ts|bare]
"""

from __future__ import annotations

import argparse
import uuid
from collections import Counter

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

PROTOCOL = "2025-11-25"
TOOLS = [
    {
        "name": "count",
        "description": "Add one to a counter kept by the server and return the new value (a side effect).",
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
        if request_id is None:  # a notification
            return Response(status_code=202)
        if method == "tools/list":
            return rpc_result(request_id, {"tools": TOOLS})
        if method == "tools/call":
            name = message["params"]["name"]
            state.ran[name] += 1
            state.counter += 1
            text = f'{{"count": {state.counter}}}'
            return rpc_result(request_id, {"content": [{"type": "text", "text": text}], "isError": False})
        return rpc_error(200, -32601, f"Method not found: {method}", request_id)

    async def expire(request: Request) -> Response:
        state.sessions.clear()
        state.always = request.query_params.get("always") == "1"
        return JSONResponse({"expired": True})

    async def stats(_: Request) -> Response:
        return JSONResponse({"opened": state.opened, "ran": dict(state.ran), "live": len(state.sessions)})

    return Starlette(
        routes=[
            Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]),
            Route("/admin/expire", expire, methods=["POST"]),
            Route("/admin/stats", stats, methods=["GET"]),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--style", choices=("ts", "bare"), default="ts")
    args = parser.parse_args()
    uvicorn.run(build_app(State(args.style)), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
