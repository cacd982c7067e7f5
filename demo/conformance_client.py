"""Client entry point for the official MCP conformance suite (``@modelcontextprotocol/conformance``).

    conformance client --command ".venv/bin/python -m demo.conformance_client" --suite core

The harness starts a mock server per scenario and runs this command with the server URL appended
as the last argument; the scenario name is in ``MCP_CONFORMANCE_SCENARIO`` and the protocol
revision to speak in ``MCP_CONFORMANCE_PROTOCOL_VERSION`` (2025-11-25 unless ``--spec-version``
says otherwise). Exit status 0 means the client did what the scenario asked; the harness then
judges what it saw on the wire.

Scenarios go through clearloop's own MCP layer: an ``McpPool`` holding one ``McpServerConfig``
(Streamable HTTP), listing tools through the catalogue and calling them through ``call_tool``.
The pool declares no client features (no elicitation, sampling or roots: clearloop has no UI to
answer a server mid-call), so the elicitation scenario is driven one level lower, through the
pool's own transport (``build_transport``) and the SDK ``Client`` exactly as ``connection.py``
builds it, plus an accept-the-defaults callback. No Django here. See docs/conformance.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp import Client
from mcp.shared.auth import AuthorizationCodeResult
from mcp.types import ElicitRequestFormParams, ElicitRequestParams, ElicitResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agent.mcp.config import McpServerConfig
from agent.mcp.connection import CLIENT_INFO
from agent.mcp.oauth import MemoryTokenStorage, oauth_provider, pre_registered
from agent.mcp.pool import McpPool
from agent.mcp.transport import build_transport

log = logging.getLogger("clearloop.conformance")

SERVER = "conformance"
Scenario = Callable[[str, str], Awaitable[None]]
SCENARIOS: dict[str, Scenario] = {}


def scenario(*names: str) -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        for name in names:
            SCENARIOS[name] = fn
        return fn

    return register


def connect_mode(protocol_version: str) -> str:
    """Handshake revisions (<= 2025-11-25) use ``initialize``; 2026+ uses the pool's default ``auto``
    (``server/discover`` first), which is what clearloop runs in production."""
    return "auto" if protocol_version in MODERN_PROTOCOL_VERSIONS else "legacy"


# The harness starts every scenario's client at once; on a loaded machine a start can outlive 10 s, so
# the test that runs the suite raises this (with the harness's own --timeout) instead of flaking.
TIMEOUT = float(os.environ.get("CLEARLOOP_CONFORMANCE_TIMEOUT", "10"))


def server_config(url: str) -> McpServerConfig:
    return McpServerConfig(name=SERVER, transport="http", url=url, connect_timeout=TIMEOUT,
                           call_timeout=2 * TIMEOUT)


def new_pool(url: str, mode: str) -> McpPool:
    log_dir = Path(tempfile.gettempdir()) / "clearloop-conformance-logs"
    return McpPool([server_config(url)], log_dir=log_dir, mode=mode)


async def list_and_call(url: str, mode: str, tool: str | None, arguments: dict[str, Any]) -> None:
    """Connect through the pool, list the tools (all pages), optionally call one; then close."""
    async with new_pool(url, mode) as pool:
        catalogue = await pool.catalogue(SERVER)
        log.info("negotiated protocol %s", (await pool.status(SERVER))["protocol_version"])
        log.info("tools: %s", [entry.remote_name for entry in catalogue.entries])
        if tool is None:
            return
        result = await pool.call_tool(SERVER, tool, arguments)
        log.info("%s -> %s", tool, result.model_dump(by_alias=True, exclude_none=True))
        if result.is_error:
            raise RuntimeError(f"{tool} returned a tool error: {result.content}")


@scenario("initialize")
async def initialize(url: str, mode: str) -> None:
    await list_and_call(url, mode, None, {})


@scenario("tools_call")
async def tools_call(url: str, mode: str) -> None:
    await list_and_call(url, mode, "add_numbers", {"a": 5, "b": 3})


@scenario("sse-retry")
async def sse_retry(url: str, mode: str) -> None:
    # The server closes the tools/call SSE stream after a priming event with `retry: 500`; the
    # transport must reconnect with GET + Last-Event-ID after that delay and get the result there.
    await list_and_call(url, mode, "test_reconnection", {})


class HeadlessSignIn:
    """The person who would approve the sign-in: the suite's authorization server approves at once,
    so the authorization URL is fetched and the code taken from its redirect (no browser here; the
    web app sends a real person to the URL instead, docs/tools-and-mcp.md "OAuth")."""

    def __init__(self) -> None:
        self.result: AuthorizationCodeResult | None = None

    async def redirect(self, authorization_url: str) -> None:
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            response = await http.get(authorization_url, follow_redirects=False)
        location = response.headers.get("location", "")
        query = parse_qs(urlparse(location).query)
        if "code" not in query:
            raise RuntimeError(f"no code in the authorization redirect ({response.status_code} {location!r})")
        first = {k: v[0] for k, v in query.items()}
        self.result = AuthorizationCodeResult(
            code=first["code"], state=first.get("state"), iss=first.get("iss")
        )

    async def callback(self) -> AuthorizationCodeResult:
        if self.result is None:
            raise RuntimeError("the callback came before the redirect")
        result, self.result = self.result, None
        return result


REDIRECT_URI = "http://localhost:3000/callback"
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


async def oauth_scenario(url: str, mode: str) -> None:
    """auth/*: the pool's HTTP transport with the SDK's OAuth client provider (agent/mcp/oauth.py):
    discovery, registration (CIMD, DCR or the pre-registered client of the scenario's context), the
    authorization code flow with PKCE and ``resource``, then list the tools and call the first one."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    client_info = None
    if context.get("client_id"):
        client_info = pre_registered(context["client_id"], context.get("client_secret"), REDIRECT_URI)
    person = HeadlessSignIn()
    auth = oauth_provider(
        url,
        MemoryTokenStorage(client_info),
        redirect_uri=REDIRECT_URI,
        redirect_handler=person.redirect,
        callback_handler=person.callback,
        client_metadata_url=CLIENT_METADATA_URL,
    )
    config = replace(server_config(url), auth=auth)
    log_dir = Path(tempfile.gettempdir()) / "clearloop-conformance-logs"
    async with McpPool([config], log_dir=log_dir, mode=mode) as pool:
        catalogue = await pool.catalogue(SERVER)
        names = [entry.remote_name for entry in catalogue.entries]
        log.info("tools: %s", names)
        if names:
            result = await pool.call_tool(SERVER, names[0], {})
            log.info("%s -> %s", names[0], result.model_dump(by_alias=True, exclude_none=True))


async def accept_defaults(_context: Any, params: ElicitRequestParams) -> ElicitResult:
    """Accept a form elicitation with every field's schema default (SEP-1034)."""
    content: dict[str, Any] = {}
    if isinstance(params, ElicitRequestFormParams):
        for name, prop in (params.requested_schema.get("properties") or {}).items():
            if isinstance(prop, dict) and "default" in prop:
                content[name] = prop["default"]
    return ElicitResult(action="accept", content=content)


@scenario("elicitation-sep1034-client-defaults")
async def elicitation_defaults(url: str, mode: str) -> None:
    with open(os.devnull, "w") as errlog:
        client = Client(
            build_transport(server_config(url), errlog),
            mode=mode,
            client_info=CLIENT_INFO,
            elicitation_callback=accept_defaults,
            cache=None,
        )
        async with client:
            await client.list_tools()
            result = await client.call_tool(
                "test_client_elicitation_defaults", {}, read_timeout_seconds=2 * TIMEOUT
            )
            log.info("result: %s", result.model_dump(by_alias=True, exclude_none=True))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s %(levelname)s %(message)s")
    name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "2025-11-25")
    if not argv:
        usage = "usage: python -m demo.conformance_client SERVER_URL (scenario in env)"
        print(usage, file=sys.stderr)
        return 2
    handler = SCENARIOS.get(name) or (oauth_scenario if name.startswith("auth/") else None)
    if handler is None:
        print(f"scenario {name!r} is not implemented; known: {', '.join(sorted(SCENARIOS))}", file=sys.stderr)
        return 1
    # CLEARLOOP_MCP_MODE=auto|legacy|2026-07-28 overrides the choice (e.g. to try production's auto).
    mode = os.environ.get("CLEARLOOP_MCP_MODE") or connect_mode(version)
    log.info("scenario %s, protocol %s (mode %s), server %s", name, version, mode, argv[-1])
    try:
        asyncio.run(handler(argv[-1], mode))
    except Exception:
        log.exception("scenario %s failed", name)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
