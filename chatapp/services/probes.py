"""What the admin's "test" buttons and ``manage.py mcp_tools`` do: one short, time-bounded probe.

Both run in a request (or a command) that owns no event loop, so each probe is one ``asyncio.run``
with its own httpx client or ``McpPool``, closed before it returns; nothing is shared with a worker.

* ``check_provider(config)`` sends a one-token request ("ping", max_output_tokens=1) and reports
  the answer or the error class and message (secrets redacted; the key itself is never reported).
* ``probe_servers(servers)`` opens every server through one pool and reports, per server, whether it
  connected, its protocol version and the tools exactly as the model would be offered them
  (``McpToolbox.list_tools`` shaped by the admin's ``ToolPolicy`` rows, as the worker does).
  OAuth servers are probed with a grant, never by signing in: "one connection for everyone" with
  the shared grant, "each user signs in" with the testing admin's own. Without a usable grant the
  report says ``sign_in_needed`` and what to do (not the server's bare 401); a listing that works is
  kept for users who have not signed in yet (``mcp_catalogues``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from django.conf import settings
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agent.mcp import McpConfigError, McpPool, McpServerConfig, McpToolbox
from agent.messages import Message as AgentMessage
from agent.providers import build_provider
from agent.providers.types import ModelRequest, ResponseDone
from agent.toolbox import ToolInfo
from chatapp.models import McpServer, ProviderConfig
from chatapp.redaction import redact_text
from chatapp.services import policies
from chatapp.services.engine_errors import engine_message
from chatapp.services.mcp_catalogues import keep_catalogue
from chatapp.services.mcp_config import to_config, user_config

PROVIDER_TIMEOUT = 30.0  # seconds for the whole provider test, connection and answer included
MCP_EXTRA_SECONDS = 10.0  # on top of a server's connect_timeout, for tools/list


# --- providers ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProviderCheck:
    provider: str
    ok: bool
    message: str  # fit to show: no secrets
    duration_ms: float
    error_class: str | None = None


async def _ping(config: ProviderConfig, timeout: float) -> Any:
    from chatapp.services.provider_settings import provider_settings

    provider_cfg = provider_settings(config, config.model)
    # One attempt, bounded: the admin wants the endpoint's answer now, not after retries.
    provider_cfg.max_retries = 0
    provider_cfg.idle_timeout = timeout
    provider_cfg.total_timeout = timeout
    request = ModelRequest(messages=(AgentMessage.user("ping"),), max_output_tokens=1)
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout)) as http:
        provider = build_provider(provider_cfg, http)
        return await asyncio.wait_for(_first_response(provider, request), timeout)


async def _first_response(provider: Any, request: ModelRequest) -> Any:
    # Like ``agent.providers.complete``, but the stream is closed here, on this loop, before
    # asyncio.run() ends it (an unfinished generator would be finalised on a closed loop).
    stream = provider.stream(request)
    async with contextlib.aclosing(stream):
        async for event in stream:
            if isinstance(event, ResponseDone):
                return event.response
    raise RuntimeError("the provider's stream ended without a response")


def check_provider(config: ProviderConfig, *, timeout: float = PROVIDER_TIMEOUT) -> ProviderCheck:
    """Send one tiny request through the configured adapter; never raises for provider trouble."""
    started = time.monotonic()
    try:
        response = asyncio.run(_ping(config, timeout))
    except TimeoutError:
        elapsed = (time.monotonic() - started) * 1000
        return ProviderCheck(
            config.name,
            False,
            gettext("TimeoutError: no complete answer within %(seconds)s s") % {"seconds": f"{timeout:g}"},
            elapsed,
            "TimeoutError",
        )
    except Exception as exc:  # noqa: BLE001 - boundary: any failure is the report, shown to the admin
        elapsed = (time.monotonic() - started) * 1000
        name = type(exc).__name__
        # The class stays; an engine configuration error is said in the admin's language, and what
        # an upstream sent stays as it sent it.
        return ProviderCheck(config.name, False, redact_text(f"{name}: {engine_message(exc)}"), elapsed, name)
    elapsed = (time.monotonic() - started) * 1000
    text = response.text or ""
    reason = response.finish_reason + (
        f" / {response.finish_reason_raw}" if response.finish_reason_raw else ""
    )
    message = gettext("answered in %(ms)s ms: %(text)s (model %(model)s, finish_reason %(reason)s)") % {
        "ms": f"{elapsed:.0f}",
        "text": repr(text[:80]),
        "model": response.model or config.model,
        "reason": reason,
    }
    return ProviderCheck(config.name, True, redact_text(message), elapsed)


# --- MCP servers ---------------------------------------------------------------------------------


@dataclass(slots=True)
class ToolReport:
    name: str  # namespaced, as the model sees it
    description: str
    parameters: dict[str, Any]
    remote_name: str | None
    offered: bool  # False: disabled by a policy or a broken schema
    tier: str
    needs_approval: bool
    disabled_reason: str | None = None
    hints: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(slots=True)
class ServerReport:
    server: str
    transport: str
    status: str  # connected | sign_in_needed | error
    protocol_version: str | None = None
    error_class: str | None = None  # the McpError class (or TimeoutError, McpConfigError) behind error
    summary: str = ""  # the error in the reader's words; ``error`` keeps the technical detail
    server_info: dict[str, Any] | None = None
    instructions: str | None = None
    error: str | None = None
    gateway: bool = False
    tools: list[ToolReport] = field(default_factory=list)

    @property
    def connected(self) -> bool:
        return self.status == "connected"

    @property
    def sign_in_needed(self) -> bool:
        return self.status == "sign_in_needed"

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["tools"] = [t.to_dict() for t in self.tools]
        return data


class _Listed:
    """A toolbox that offers a fixed list, so the worker's PolicyToolbox can shape it."""

    def __init__(self, infos: list[ToolInfo]) -> None:
        self.infos = infos

    async def list_tools(self) -> list[ToolInfo]:
        return self.infos


async def _shape(infos: list[ToolInfo], rules: list, trusted: set[str]) -> list[ToolReport]:
    from chatapp.services.policy_toolbox import PolicyToolbox

    box = PolicyToolbox(_Listed(infos), rules, trusted, {})
    offered = {info.spec.name: info for info in await box.list_tools()}
    reports = []
    for info in infos:
        rule = box.effective[info.spec.name]
        shown = offered.get(info.spec.name, info)
        reports.append(
            ToolReport(
                name=shown.spec.name,
                description=shown.spec.description,
                parameters=shown.spec.parameters,
                remote_name=info.remote_name,
                offered=info.spec.name in offered,
                tier=rule.tier,
                needs_approval=rule.needs_approval,
                disabled_reason=info.disabled_reason or (None if rule.enabled else POLICY_DISABLED),
                hints=dict(info.hints),
            )
        )
    return reports


async def _probe_one(
    pool: McpPool, config: McpServerConfig, overrides: dict[str, str], rules: list, trusted: set[str]
) -> ServerReport:
    report = ServerReport(config.name, config.transport, "error", gateway=config.gateway)
    toolbox = McpToolbox(pool, [config], description_overrides=overrides, on_listed=_keep)
    try:
        infos = await asyncio.wait_for(toolbox.list_tools(), config.connect_timeout + MCP_EXTRA_SECONDS)
    except TimeoutError:
        report.error = f"no tool list within {config.connect_timeout + MCP_EXTRA_SECONDS:g} s"
        report.error_class = "TimeoutError"
        infos = []
    if config.name in toolbox.signed_out:
        report.status = "sign_in_needed"  # probe_servers says who signs in, and where
        report.error = toolbox.signed_out[config.name]
        return report
    status = await pool.status(config.name)
    report.protocol_version = status.get("protocol_version")
    report.server_info = status.get("server_info")
    report.instructions = status.get("instructions")
    if report.error is None and config.name in toolbox.errors:
        report.error = toolbox.errors[config.name]
        report.error_class = toolbox.error_kinds.get(config.name)
    if report.error is None:
        report.status = "connected"
        report.tools = await _shape(infos, rules, trusted)
    return report


async def _keep(catalogue: Any) -> None:
    await asyncio.to_thread(_keep_closing, catalogue)


def _keep_closing(catalogue: Any) -> None:
    from django.db import connection

    try:
        keep_catalogue(catalogue)
    finally:
        connection.close()  # a thread of its own: its connection must not outlive it


async def _probe(configs: list[McpServerConfig], rules: list) -> list[ServerReport]:
    overrides = {pattern: rule.description for pattern, rule in rules if rule.description}
    trusted = {c.name for c in configs if c.trusted}
    log_dir = Path(settings.DATA_DIR) / "logs" / "mcp-checks"
    async with McpPool(configs, log_dir=log_dir) as pool:
        results = await asyncio.gather(
            *(_probe_one(pool, c, overrides, rules, trusted) for c in configs), return_exceptions=True
        )
    reports = []
    for config, result in zip(configs, results, strict=True):
        if isinstance(result, BaseException):  # a bug or an SDK surprise: still only this server
            reports.append(
                ServerReport(
                    config.name,
                    config.transport,
                    "error",
                    error=f"{type(result).__name__}: {result}",
                    error_class="unexpected",
                )
            )
        else:
            reports.append(result)
    return reports


# Lazy, and read when a report is made: the admin's test shows them in the admin's language (the
# mcp_tools command, which has no reader, in English).
SIGN_IN_ADVICE: dict[str, Any] = {
    McpServer.AuthMode.SHARED: _(
        "Nobody is signed in for everyone, or that sign-in is no longer valid: "
        "use “Sign in for everyone” on this server's page."
    ),
    McpServer.AuthMode.PER_USER: _(
        "Each user signs in to this server, and you are not signed in (or "
        "your sign-in is no longer valid): use “Sign in with my account” on this server's page to test it."
    ),
}
POLICY_DISABLED = "disabled by a policy"
# What each failure means, in words; ``ServerReport.error`` keeps the technical detail beside it.
FAILURES: dict[str, Any] = {
    "McpConfigError": _("The server's settings cannot work."),
    "TimeoutError": _("The server sent no tool list in time (its connect timeout plus %(extra)s s)."),
    "ServerUnavailableError": _(
        "The server could not be started or reached, or did not complete the handshake."
    ),
    "ServerStartTimeoutError": _(
        "The server did not start and complete the handshake within its connect timeout."
    ),
    "CallTimeoutError": _("The server did not answer the tool list request in time."),
    "ConnectionLostError": _("The connection to the server was lost while listing its tools."),
    "SessionExpiredError": _("The server ended the session while listing its tools."),
    "RemoteError": _("The server answered the tool list request with an error."),
    "UnknownServerError": _("The server is not configured."),
    "unexpected": _(
        "Testing the server failed unexpectedly (see the detail; the other servers were tested)."
    ),
}
UNKNOWN_FAILURE = _("The server could not be tested.")


def _explain(report: ServerReport, mode: str) -> None:
    """The report's summary in the active language (see FAILURES, SIGN_IN_ADVICE)."""
    if report.sign_in_needed:
        report.summary = gettext("Sign-in needed. %(advice)s") % {"advice": SIGN_IN_ADVICE.get(mode, "")}
    elif report.error:
        template = FAILURES.get(report.error_class or "", UNKNOWN_FAILURE)
        report.summary = str(template) % {"extra": f"{MCP_EXTRA_SECONDS:g}"}
    for tool in report.tools:
        if tool.disabled_reason == POLICY_DISABLED:
            tool.disabled_reason = gettext("disabled by a policy")


def probe_servers(servers: Iterable[McpServer], user_id: int | None = None) -> list[ServerReport]:
    """Connect to each server (enabled or not: the admin asked), list its tools, close everything.

    A server whose row cannot become a config, or that fails to start, is reported with its error;
    the others are probed all the same. An "each user signs in" server is probed with the grant of
    ``user_id`` (the admin testing it), a shared one with the shared grant.
    """
    rows: Sequence[McpServer] = list(servers)
    rules = policies.load_rules()
    reports: dict[str, ServerReport] = {}
    configs: list[McpServerConfig] = []
    for row in rows:
        if row.auth_mode == McpServer.AuthMode.PER_USER and user_id is None:
            # Only a person's grant opens it (manage.py mcp_tools has none): nothing to probe with.
            reports[row.name] = ServerReport(row.name, row.transport, "sign_in_needed")
            continue
        try:
            config = user_config(row, user_id) if user_id is not None else to_config(row)
            configs.append(dataclasses.replace(config, enabled=True))
        except McpConfigError as exc:
            reports[row.name] = ServerReport(
                row.name, row.transport, "error", error=engine_message(exc), error_class="McpConfigError"
            )
    if configs:
        for report in asyncio.run(_probe(configs, rules)):
            reports[report.server] = report
    modes = {row.name: row.auth_mode for row in rows}
    for report in reports.values():
        _explain(report, modes[report.server])
        if report.error:
            report.error = redact_text(report.error)
    return [reports[row.name] for row in rows if row.name in reports]
