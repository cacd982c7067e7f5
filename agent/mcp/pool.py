"""McpPool: every configured server's session, on the worker's one asyncio loop (R-MCP-5).

Sessions open lazily on first use, are reused across calls and runs, and carry concurrent calls.
Each call has a timeout whose expiry (or the caller's cancellation) reaches the server as
``notifications/cancelled``. A server that crashed is restarted on next use (with backoff); a
server whose start or initialize hangs times out alone, the others keep working. ``aclose()`` ends
every session and waits until stdio children are gone.

All methods must run on the loop that first used the pool: sessions belong to that loop's tasks.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from mcp import MCPError
from mcp.types import CallToolResult, GetPromptResult, Prompt, ReadResourceResult, Resource
from pydantic import ValidationError

from agent.deadline import Deadline
from agent.mcp.catalogue import Catalogue, build_catalogue
from agent.mcp.config import McpServerConfig
from agent.mcp.connection import Backoff, ServerConnection
from agent.mcp.elicitation import CallHooks, ask_user, current_call
from agent.mcp.errors import (
    CallTimeoutError,
    ConnectionLostError,
    LinkRequiredError,
    McpError,
    RemoteError,
    SessionExpiredError,
    SignInRequiredError,
    UnknownServerError,
    from_sdk_error,
)
from agent.mcp.oauth import pending_sign_in
from agent.toolbox import AskLinkFn, ProgressFn

log = logging.getLogger(__name__)

MAX_PAGES = 100  # a server whose cursor never ends cannot hang a listing


class McpPool:
    def __init__(
        self,
        configs: Iterable[McpServerConfig] = (),
        *,
        log_dir: Path | None = None,
        mode: str = "auto",
        backoff_base: float = 0.5,
        backoff_ceiling: float = 30.0,
    ) -> None:
        self.log_dir = Path(log_dir or Path(tempfile.gettempdir()) / "clearloop-mcp-logs")
        self.mode = mode
        self._backoff = (backoff_base, backoff_ceiling)
        self._configs: dict[str, McpServerConfig] = {}
        self._conns: dict[str, ServerConnection] = {}
        self._catalogues: dict[str, Catalogue] = {}
        self._stale: set[str] = set()
        self._generation: dict[str, int] = {}
        self._listeners: list[Callable[[str], None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._retired: list[ServerConnection] = []
        for config in configs:
            self.configure(config)

    # --- configuration ---------------------------------------------------------------------------

    def configure(self, config: McpServerConfig) -> None:
        """Add a server, or replace its config (a changed config restarts it on next use)."""
        old = self._configs.get(config.name)
        self._configs[config.name] = config
        if old is not None and old != config and config.name in self._conns:
            conn = self._conns.pop(config.name)
            self._catalogues.pop(config.name, None)
            self._spawn_close(conn)

    def config(self, name: str) -> McpServerConfig:
        try:
            return self._configs[name]
        except KeyError:
            raise UnknownServerError(name, "not configured") from None

    @property
    def servers(self) -> list[str]:
        return list(self._configs)

    def add_listener(self, callback: Callable[[str], None]) -> None:
        """``callback(server)`` runs (on the pool's loop) when a server announces changed tools."""
        self._listeners.append(callback)

    async def remove(self, name: str) -> None:
        self._configs.pop(name, None)
        self._catalogues.pop(name, None)
        conn = self._conns.pop(name, None)
        if conn is not None:
            await conn.close()

    # --- sessions --------------------------------------------------------------------------------

    def _check_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError("McpPool used from a second event loop; it lives on one loop per process")
        if self._closed:
            raise RuntimeError("McpPool is closed")

    def _conn(self, name: str) -> ServerConnection:
        self._check_loop()
        config = self.config(name)
        if not config.enabled:
            raise UnknownServerError(name, "disabled")
        conn = self._conns.get(name)
        if conn is None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            conn = ServerConnection(
                config,
                log_dir=self.log_dir,
                mode=self.mode,
                on_tools_changed=self._tools_changed,
                backoff=Backoff(*self._backoff),
            )
            self._conns[name] = conn
        return conn

    def _tools_changed(self, name: str) -> None:
        self._stale.add(name)
        for callback in list(self._listeners):
            callback(name)

    def _signed_out(self, name: str, what: str) -> SignInRequiredError | None:
        """Why a request of ``name`` ended with its connection, if a person must sign in: for a
        ``tools/call``, only when its own request needed the sign-in (another call's may have run)."""
        hooks = current_call.get()
        found = hooks.sign_in if hooks is not None else pending_sign_in(self.config(name).auth)
        if found is None:
            return None
        return SignInRequiredError(name, f"{found}; {what} was not sent")

    async def _request(self, name: str, what: str, fn: Callable[[Any], Any]) -> Any:
        """Run ``fn(client)`` on the server's session, mapping SDK failures to ``McpError``.

        A request the server answered with "session ended" (HTTP 404) never ran: the session is
        re-opened (a new initialize) and the request sent once more. A second expiry is an error.
        """
        for attempt in (1, 2):
            conn = self._conn(name)
            client = await conn.get()
            try:
                return await fn(client)
            except MCPError as exc:
                err = from_sdk_error(name, exc, what, session_expired=conn.session_expired(client))
                if isinstance(err, ConnectionLostError) and (signed_out := self._signed_out(name, what)):
                    conn.reopen(client)  # the transport ended for the sign-in: a new one next time
                    raise signed_out from exc
                if isinstance(err, SessionExpiredError):
                    conn.reopen(client)
                    if attempt == 1:
                        log.info("MCP server %s ended the session; re-opening it for %s", name, what)
                        continue
                elif isinstance(err, ConnectionLostError):
                    conn.mark_broken(err.detail)
                raise err from exc
            except ValidationError as exc:
                raise RemoteError(
                    name, f"{what} returned a result that does not follow the protocol: {exc}"
                ) from exc
            except RuntimeError as exc:  # the SDK's outputSchema check on structuredContent
                raise RemoteError(name, f"{what} returned an invalid result: {exc}") from exc
            except (OSError, EOFError) as exc:
                conn.mark_broken(str(exc))
                raise ConnectionLostError(name, f"{what} failed: {exc}") from exc
        raise AssertionError("unreachable")

    async def status(self, name: str) -> dict[str, Any]:
        """What the admin's "test connection" shows: state, era, server info, last error."""
        conn = self._conns.get(name)
        client = conn.client if conn else None
        return {
            "server": name,
            "state": conn.state if conn else "idle",
            "protocol_version": client.protocol_version if client else None,
            "server_info": client.server_info.model_dump() if client and client.server_info else None,
            "instructions": client.instructions if client else None,
            "last_error": conn.last_error if conn else None,
            "log_path": str(conn.log_path) if conn else None,
        }

    # --- tools -----------------------------------------------------------------------------------

    async def catalogue(self, name: str, *, refresh: bool = False) -> Catalogue:
        """The server's tools (all pages), refetched after list_changed or when ``refresh``."""
        self._check_loop()
        cached = self._catalogues.get(name)
        if cached is not None and not refresh and name not in self._stale:
            return cached
        self._stale.discard(name)

        async def fetch(client: Any) -> list[Any]:
            tools, cursor = [], None
            for _ in range(MAX_PAGES):
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
            return tools

        tools = await self._request(name, "tools/list", fetch)
        generation = self._generation.get(name, 0) + (1 if cached is not None else 0)
        self._generation[name] = generation
        catalogue = build_catalogue(name, tools, generation)
        self._catalogues[name] = catalogue
        return catalogue

    async def call_tool(
        self,
        name: str,
        tool: str,
        arguments: dict[str, Any],
        *,
        timeout: float | None = None,
        max_timeout: float | None = None,
        on_progress: ProgressFn | None = None,
        ask_link: AskLinkFn | None = None,
    ) -> CallToolResult:
        """``tools/call``; raises ``CallTimeoutError``, ``ConnectionLostError``, ``RemoteError`` ...

        The call asks for progress (``_meta.progressToken``); each report gives it another
        ``timeout`` seconds, up to ``max_timeout`` in all, and is passed on to ``on_progress``.
        When the deadline passes the SDK is cancelled, which sends ``notifications/cancelled``.
        A link the server asks the user to open goes to ``ask_link``, the clock stopped meanwhile
        (``elicitation.py``); a -32042 answer shows its links and raises ``LinkRequiredError``.
        """
        deadline = Deadline(timeout if timeout is not None else self.config(name).call_timeout, max_timeout)
        hooks = CallHooks(ask_link, deadline)

        async def progress(value: float, total: float | None, message: str | None) -> None:
            deadline.extend()
            if on_progress is not None:
                await on_progress(value, total, message)

        def send(client: Any) -> Any:
            # Our deadline is the one clock (it stops while the user is asked; the SDK's would not
            # for a legacy server->client request), so the SDK gets none.
            return client.call_tool(tool, arguments, read_timeout_seconds=None, progress_callback=progress)

        conn = self._conn(name)
        conn.in_flight.add(hooks)
        token = current_call.set(hooks)
        try:
            async with deadline.running():
                result = await self._request(name, f"tools/call {tool}", send)
        except TimeoutError:
            raise CallTimeoutError(
                name,
                f"tools/call {tool} did not answer within {deadline.describe()}; "
                "the server was asked to cancel it",
            ) from None
        except LinkRequiredError as exc:
            for link in exc.links:
                await ask_user(name, hooks, link, wait=False)
            raise
        finally:
            current_call.reset(token)
            conn.in_flight.discard(hooks)
        self._conns[name].backoff.reset()
        return result

    # --- resources and prompts (R-MCP-7) ---------------------------------------------------------

    async def list_resources(self, name: str) -> list[Resource]:
        async def fetch(client: Any) -> list[Resource]:
            items, cursor = [], None
            for _ in range(MAX_PAGES):
                page = await client.list_resources(cursor=cursor)
                items.extend(page.resources)
                if not (cursor := page.next_cursor):
                    break
            return items

        return await self._request(name, "resources/list", fetch)

    async def read_resource(self, name: str, uri: str) -> ReadResourceResult:
        return await self._request(name, f"resources/read {uri}", lambda c: c.read_resource(uri))

    async def list_prompts(self, name: str) -> list[Prompt]:
        async def fetch(client: Any) -> list[Prompt]:
            items, cursor = [], None
            for _ in range(MAX_PAGES):
                page = await client.list_prompts(cursor=cursor)
                items.extend(page.prompts)
                if not (cursor := page.next_cursor):
                    break
            return items

        return await self._request(name, "prompts/list", fetch)

    async def get_prompt(
        self, name: str, prompt: str, arguments: dict[str, str] | None = None
    ) -> GetPromptResult:
        return await self._request(
            name, f"prompts/get {prompt}", lambda c: c.get_prompt(prompt, arguments or {})
        )

    # --- lifecycle -------------------------------------------------------------------------------

    def _spawn_close(self, conn: ServerConnection) -> None:
        # Replaced configs are closed in the background; aclose() still waits for them.
        self._retired.append(conn)
        try:
            asyncio.get_running_loop().create_task(conn.close())
        except RuntimeError:  # configure() called outside the loop: aclose() will close it
            pass

    async def aclose(self) -> None:
        """Close every session; returns once every stdio child has exited."""
        self._closed = True
        conns, self._conns = [*self._conns.values(), *self._retired], {}
        self._retired = []
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)

    async def __aenter__(self) -> McpPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


__all__ = ["McpError", "McpPool"]
