"""One server's live session, held by its own long-lived task.

An anyio context manager (the SDK ``Client`` and its transport) must be entered and exited by the
same task, so each connection has a runner task that enters the client, publishes it, then waits
until it is told to stop or the transport closes. Callers use the published ``Client`` from their own
tasks: requests are multiplexed by id, so calls run concurrently on one session, and a caller's
timeout or cancellation sends ``notifications/cancelled`` to the server.

States: idle -> starting -> ready -> (closed by stop | broken by crash) -> starting ...
A broken connection is restarted on next use; consecutive failures back off exponentially.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO, cast

from mcp import Client
from mcp.types import ElicitResult, Implementation, ToolListChangedNotification
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agent.mcp.config import McpServerConfig
from agent.mcp.elicitation import CallHooks, current_call, on_elicitation
from agent.mcp.errors import (
    ServerStartTimeoutError,
    ServerUnavailableError,
    SignInRequiredError,
    first_leaf,
)
from agent.mcp.oauth import SignInRequired
from agent.mcp.stdio_guard import CappedLog
from agent.mcp.transport import build_transport, watched

log = logging.getLogger(__name__)

CLIENT_INFO = Implementation(name="clearloop", version="0.1.0")


class Backoff:
    """Immediate restart after one failure, then 0.5 s, 1 s, 2 s ... up to ``ceiling``."""

    def __init__(self, base: float = 0.5, ceiling: float = 30.0) -> None:
        self.base, self.ceiling = base, ceiling
        self.failures = 0
        self.last_failure = 0.0

    def record_failure(self) -> None:
        self.failures += 1
        self.last_failure = time.monotonic()

    def reset(self) -> None:
        self.failures = 0

    def wait_left(self) -> float:
        if self.failures <= 1:
            return 0.0
        delay = min(self.base * 2 ** (self.failures - 2), self.ceiling)
        return max(0.0, self.last_failure + delay - time.monotonic())


class ServerConnection:
    def __init__(
        self,
        config: McpServerConfig,
        *,
        log_dir: Path,
        mode: str = "auto",
        on_tools_changed: Callable[[str], None] | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        self.config = config
        self.log_path = log_dir / f"{config.name}.stderr.log"
        self.mode = mode
        self.backoff = backoff or Backoff()
        self.last_error: str | None = None
        self._on_tools_changed = on_tools_changed
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._stopping: set[asyncio.Task[None]] = set()
        self._expired: Client | None = None  # the client whose HTTP session the server ended
        self.in_flight: set[CallHooks] = set()  # tools/call requests running on this session

    @property
    def state(self) -> str:
        if self._client is not None:
            return "ready"
        if self._task is not None and not self._task.done():
            return "starting"
        return "broken" if self.backoff.failures else "idle"

    @property
    def client(self) -> Client | None:
        return self._client

    async def get(self) -> Client:
        """The live client, starting (or restarting) the server if needed."""
        if self._client is not None:
            return self._client
        async with self._lock:
            if self._client is not None:
                return self._client
            self._reap()
            left = self.backoff.wait_left()
            if left > 0:
                raise ServerUnavailableError(
                    self.config.name,
                    f"failed {self.backoff.failures} times in a row ({self.last_error}); "
                    f"next start attempt in {left:.1f} s",
                )
            return await self._start()

    def mark_broken(self, reason: str) -> None:
        """Called when a request saw the connection die: the next ``get`` restarts the server."""
        if self._client is not None:
            self.last_error = reason
            self.backoff.record_failure()
            self._client = None
            self._wake.set()

    def session_expired(self, client: Client) -> bool:
        """Whether the server answered one of ``client``'s requests with 404 (session ended)."""
        return self._expired is client

    def reopen(self, client: Client) -> None:
        """Drop ``client`` (its session is gone) so the next ``get`` opens a new session.

        Not a failure: no backoff. A no-op when another caller already replaced that client.
        """
        if self._client is client:
            self.last_error = "the server ended the session; a new one is opened"
            self._client = None
            self._wake.set()

    async def _start(self) -> Client:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Client] = loop.create_future()
        self._wake = asyncio.Event()
        # The runner (and the SDK tasks it starts, which answer the server's requests) must not
        # inherit the context of the call that happened to start the session: that call's hooks
        # would then receive links meant for later calls.
        context = contextvars.copy_context()
        context.run(current_call.set, None)
        self._task = asyncio.create_task(
            self._run(ready, self._wake), name=f"mcp-server:{self.config.name}", context=context
        )
        try:
            client = await asyncio.wait_for(asyncio.shield(ready), timeout=self.config.connect_timeout)
        except TimeoutError:
            ready.cancel()  # nobody waits for it any more: the runner must not set a result on it
            self._fail("start or initialize did not finish", timeout=True)
            raise ServerStartTimeoutError(
                self.config.name, f"start or initialize took longer than {self.config.connect_timeout:g} s"
            ) from None
        except SignInRequiredError as exc:
            # Not the server's failure: no backoff, the next use (after a sign-in) starts at once.
            self.last_error = exc.detail
            self._reap()
            raise
        except ServerUnavailableError as exc:
            self._fail(exc.detail)
            raise
        except asyncio.CancelledError:
            ready.cancel()
            self._fail("start cancelled")
            raise
        self.last_error = None
        self._client = client
        return client

    def _fail(self, reason: str, *, timeout: bool = False) -> None:
        self.last_error = reason
        self.backoff.record_failure()
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._reap()

    def _reap(self) -> None:
        """Hand a finished or cancelled runner to the set awaited by ``close`` (no orphans)."""
        if self._task is not None:
            self._stopping.add(self._task)
            self._task.add_done_callback(self._stopping.discard)
            self._task = None

    async def _run(self, ready: asyncio.Future[Client], wake: asyncio.Event) -> None:
        errlog = CappedLog(self.log_path)  # rotated at a size cap (L7)
        closed = False
        signed_out = False
        published: Client | None = None

        def on_closed() -> None:
            nonlocal closed
            closed = True
            wake.set()

        holder: list[Client] = []

        def on_session_expired() -> None:
            if holder:
                self._expired = holder[0]

        try:
            opened = build_transport(self.config, cast(TextIO, errlog), on_session_expired)
            transport = watched(opened, on_closed)
            client = Client(
                transport,
                mode=self.mode,
                message_handler=self._on_message,
                elicitation_callback=cast(Any, self._on_elicitation),  # the SDK's protocol type
                client_info=CLIENT_INFO,
                cache=None,  # the pool's catalogue is the cache; list_changed refreshes it
            )
            holder.append(client)
            async with client:
                if not ready.done():
                    ready.set_result(client)
                    published = client
                await self._serve(client, wake)
        except asyncio.CancelledError:
            if not ready.done():
                ready.set_exception(ServerUnavailableError(self.config.name, "start cancelled"))
            raise
        except Exception as exc:  # boundary: any transport/handshake failure becomes a server error
            leaf = first_leaf(exc)
            reason = f"{type(leaf).__name__}: {leaf}"
            if isinstance(leaf, SignInRequired):
                signed_out = True
                log.info("MCP server %s: %s", self.config.name, leaf)
                if not ready.done():
                    ready.set_exception(SignInRequiredError(self.config.name, str(leaf)))
            else:
                log.warning("MCP server %s ended: %s", self.config.name, reason)
            if not ready.done():
                ready.set_exception(ServerUnavailableError(self.config.name, f"could not start: {reason}"))
        finally:
            errlog.close()
            if published is not None and self._client is published:
                if signed_out:  # the transport ended for a sign-in, not a crash: no backoff
                    self.reopen(published)
                else:
                    self.mark_broken("server closed the connection" if closed else "session ended")

    async def _serve(self, client: Client, wake: asyncio.Event) -> None:
        """Wait for stop or closure; on the 2026 era also hold a tools list_changed subscription."""
        listener = None
        caps = client.server_capabilities.tools
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS and caps is not None and caps.list_changed:
            listener = asyncio.create_task(self._listen(client))
        try:
            await wake.wait()
        finally:
            if listener is not None:
                listener.cancel()
                with contextlib.suppress(BaseException):
                    await listener

    async def _listen(self, client: Client) -> None:
        try:
            async with client.listen(tools_list_changed=True) as sub:
                async for _event in sub:
                    self._tools_changed()
        except Exception as exc:  # boundary: a lost subscription only costs freshness, not the session
            log.info("MCP server %s: list_changed subscription ended: %s", self.config.name, exc)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, ToolListChangedNotification):
            self._tools_changed()
        elif isinstance(message, Exception):
            # e.g. a stray print() on the server's stdout: the SDK skips the line and carries on.
            log.info("MCP server %s sent something that is not MCP: %s", self.config.name, message)

    async def _on_elicitation(self, _ctx: Any, params: Any) -> ElicitResult:
        return await on_elicitation(self.config.name, self.in_flight, params)

    def _tools_changed(self) -> None:
        if self._on_tools_changed is not None:
            self._on_tools_changed(self.config.name)

    async def close(self) -> None:
        """Stop the runner and wait for the transport to end (stdio child gone)."""
        async with self._lock:
            client, self._client = self._client, None
            self._wake.set()
            if client is None and self._task is not None:
                self._task.cancel()
            self._reap()
            pending = list(self._stopping)
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
