"""McpToolbox: the Toolbox over a set of MCP servers in a pool.

Each non-gateway server's tools are offered as ``server__tool`` with risk ``high`` (the host's policy
lowers it per tool; annotations are passed along as hints only). Gateway servers are offered
together as one ``mcp_call_tool``. A server that cannot start is left out of the listing (its error
in ``errors``) while every other server's tools stay available.

A server that needs a person to sign in first (MCP OAuth, ``SignInRequiredError``) is offered from
the catalogue the host last saw (``known``), so the model can choose its tools; calling one then
answers ``sign_in_required`` (nothing sent) and the loop makes the run wait for the sign-in. The host
learns of every fresh listing through ``on_listed`` (to keep it for those runs).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from agent.mcp import gateway
from agent.mcp.catalogue import Catalogue, CatalogueEntry, model_parameters
from agent.mcp.config import McpServerConfig
from agent.mcp.errors import (
    CallTimeoutError,
    ConnectionLostError,
    LinkRequiredError,
    McpError,
    RemoteError,
    SessionExpiredError,
    SignInRequiredError,
    UnknownServerError,
)
from agent.mcp.pool import McpPool
from agent.mcp.results import DEFAULT_MAX_CHARS, map_call_result
from agent.messages import ToolSpec
from agent.toolbox import ToolContext, ToolInfo, ToolOutcome

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Route:
    server: str
    remote_name: str
    definition_hash: str


class McpToolbox:
    def __init__(
        self,
        pool: McpPool,
        servers: Sequence[McpServerConfig | str],
        *,
        max_result_chars: int = DEFAULT_MAX_CHARS,
        description_overrides: Mapping[str, str] | None = None,
        known: Mapping[str, Catalogue] | None = None,
        on_listed: Callable[[Catalogue], Awaitable[None]] | None = None,
    ) -> None:
        self.pool = pool
        self.known = dict(known or {})  # server -> the catalogue last seen (by any user's session)
        self.on_listed = on_listed
        self.signed_out: dict[str, str] = {}  # server -> why it needs a sign-in (not asked again)
        self.max_result_chars = max_result_chars
        self.overrides = dict(description_overrides or {})
        self.names: list[str] = []
        for server in servers:
            if isinstance(server, McpServerConfig):
                if server.name not in pool.servers or pool.config(server.name) != server:
                    pool.configure(server)
                server = server.name
            self.names.append(server)
        self.errors: dict[str, str] = {}  # server -> why its tools are missing from the listing
        # server -> the McpError class behind ``errors`` (a host explains it in its own words)
        self.error_kinds: dict[str, str] = {}
        self._routes: dict[str, _Route] = {}

    def _enabled(self) -> list[McpServerConfig]:
        configs = []
        for name in self.names:
            try:
                config = self.pool.config(name)
            except UnknownServerError:
                continue
            if config.enabled:
                configs.append(config)
        return configs

    async def _catalogues(self, configs: list[McpServerConfig]) -> dict[str, Catalogue]:
        # A server that needed a sign-in is not asked again by this toolbox (one run segment): its
        # calls ask, and each listing would repeat the discovery requests for nothing.
        asked = [c for c in configs if c.name not in self.signed_out]
        results = await asyncio.gather(*(self.pool.catalogue(c.name) for c in asked), return_exceptions=True)
        found: dict[str, Catalogue] = {
            name: self.known[name] for name in self.signed_out if name in self.known
        }
        for config, result in zip(asked, results, strict=True):
            if isinstance(result, SignInRequiredError):
                self.signed_out[config.name] = result.detail
            if isinstance(result, SignInRequiredError) and config.name in self.known:
                found[config.name] = self.known[config.name]
            elif isinstance(result, McpError):
                self.errors[config.name] = result.detail
                self.error_kinds[config.name] = type(result).__name__
                log.warning("MCP server %s left out of the tool list: %s", config.name, result.detail)
            elif isinstance(result, BaseException):
                raise result
            else:
                self.errors.pop(config.name, None)
                self.error_kinds.pop(config.name, None)
                found[config.name] = result
                await self._listed(result)
        return found

    async def _listed(self, catalogue: Catalogue) -> None:
        seen = self.known.get(catalogue.server)
        if seen is not None and seen.entries == catalogue.entries:
            return
        self.known[catalogue.server] = catalogue
        if self.on_listed is not None:
            try:
                await self.on_listed(catalogue)
            except Exception:  # noqa: BLE001 - keeping the listing is a convenience, not the run's concern
                log.warning("keeping the tool list of %s failed", catalogue.server, exc_info=True)

    async def list_tools(self) -> list[ToolInfo]:
        configs = self._enabled()
        catalogues = await self._catalogues(configs)
        tools: list[ToolInfo] = []
        routes: dict[str, _Route] = {}
        gateway_cats: dict[str, Catalogue] = {}
        for config in configs:
            catalogue = catalogues.get(config.name)
            if catalogue is None:
                continue
            if config.gateway:
                gateway_cats[config.name] = catalogue
                continue
            for entry in catalogue.entries:
                tools.append(self._info(entry))
                routes[entry.exposed_name] = _Route(entry.server, entry.remote_name, entry.definition_hash)
        if gateway_cats:
            spec = gateway.gateway_spec(gateway_cats)
            server = next(iter(gateway_cats)) if len(gateway_cats) == 1 else None
            tools.append(
                ToolInfo(spec=spec, risk="high", server=server, definition_hash=gateway.gateway_hash(spec))
            )
        self._routes = routes
        return tools

    def _info(self, entry: CatalogueEntry) -> ToolInfo:
        description = self.overrides.get(entry.exposed_name, entry.description)
        hints = dict(entry.annotations)
        if entry.title:
            hints.setdefault("title", entry.title)
        return ToolInfo(
            spec=ToolSpec(entry.exposed_name, description, model_parameters(entry.input_schema)),
            risk="high",
            idempotent=False,
            server=entry.server,
            remote_name=entry.remote_name,
            definition_hash=entry.definition_hash,
            disabled_reason=entry.disabled_reason,
            hints=hints,
        )

    async def execute(self, name: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        if name == gateway.GATEWAY_TOOL:
            return await self._execute_gateway(arguments, ctx)
        if name not in self._routes:
            await self.list_tools()  # e.g. a run resumed in a new worker before listing
        route = self._routes.get(name)
        if route is None:
            return ToolOutcome.failure("unknown_tool", f"no MCP tool named {name!r}")
        try:
            entry = (await self.pool.catalogue(route.server)).by_remote(route.remote_name)
        except SignInRequiredError as exc:
            return ToolOutcome.failure("sign_in_required", exc.detail)
        except McpError as exc:
            return ToolOutcome.failure("execution_error", str(exc))
        if entry is None:
            return ToolOutcome.failure(
                "unknown_tool", f"{route.server} no longer offers {route.remote_name!r}"
            )
        if entry.definition_hash != route.definition_hash:
            # Approval and validation were made against the definition the model saw; a changed
            # definition needs a fresh listing before it may run.
            return ToolOutcome.failure(
                "execution_error", f"{name} changed on its server since it was offered"
            )
        return await self._call(entry, arguments, ctx)

    async def _execute_gateway(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        server, tool = arguments.get("server"), arguments.get("tool")
        gateway_servers = {c.name for c in self._enabled() if c.gateway}
        if server not in gateway_servers:
            return ToolOutcome.failure(
                "invalid_arguments", f"server must be one of {sorted(gateway_servers)}"
            )
        try:
            entry = (await self.pool.catalogue(server)).by_remote(str(tool))
        except SignInRequiredError as exc:
            return ToolOutcome.failure("sign_in_required", exc.detail)
        except McpError as exc:
            return ToolOutcome.failure("execution_error", str(exc))
        if entry is None or entry.disabled_reason:
            why = entry.disabled_reason if entry else "no such tool"
            return ToolOutcome.failure("invalid_arguments", f"{server}/{tool}: {why}")
        call_args = arguments.get("arguments") or {}
        problem = gateway.check_arguments(entry, call_args)
        if problem:
            return ToolOutcome.failure("invalid_arguments", problem)
        return await self._call(entry, call_args, ctx)

    async def _call(self, entry: CatalogueEntry, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        if entry.disabled_reason:
            return ToolOutcome.failure(
                "unknown_tool", f"{entry.exposed_name} is disabled: {entry.disabled_reason}"
            )
        config = self.pool.config(entry.server)
        timeout = min(ctx.timeout, config.call_timeout) if ctx.timeout else config.call_timeout
        try:
            result = await self.pool.call_tool(
                entry.server,
                entry.remote_name,
                arguments,
                timeout=timeout,
                max_timeout=ctx.max_timeout,
                on_progress=ctx.progress,
                ask_link=ctx.ask_link,
            )
        except CallTimeoutError as exc:
            return ToolOutcome.failure("timeout", exc.detail)
        except ConnectionLostError as exc:
            read_only = config.trusted and entry.annotations.get("readOnlyHint") is True
            if read_only:
                return ToolOutcome.failure("execution_error", exc.detail)
            return ToolOutcome.failure(
                "outcome_unknown",
                f"{exc.detail}; the call may or may not have taken effect, so it is not repeated",
            )
        except RemoteError as exc:
            return ToolOutcome.failure(
                "invalid_arguments" if exc.invalid_params else "execution_error", exc.detail
            )
        except LinkRequiredError as exc:
            hosts = ", ".join(sorted({urlsplit(link.url).hostname or "?" for link in exc.links})) or "?"
            return ToolOutcome.failure(
                "execution_error",
                f"{exc.detail}. The link ({hosts}) was shown to the user; ask them to tell you when "
                "they have finished there, then call the tool again.",
            )
        except SignInRequiredError as exc:  # this call's own request needed it: nothing was sent
            return ToolOutcome.failure("sign_in_required", exc.detail)
        except SessionExpiredError as exc:  # expired twice in a row: it never ran, so not "unknown"
            return ToolOutcome.failure("execution_error", f"{exc.detail} (after re-opening it once)")
        except McpError as exc:  # server unavailable: the call never reached it
            return ToolOutcome.failure("execution_error", str(exc))
        return map_call_result(result, self.max_result_chars)
