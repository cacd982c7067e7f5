"""The tools a run is offered, shaped by the admin's policies, and the policy hook that guards them.

Built-in tools (workspace files, read-only SQL) and every enabled MCP server are combined; the
conversation's toggles filter them; ``ToolPolicy`` rows set each tool's tier, approval mode and the
description the model reads (R-LOOP-8).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from django.conf import settings

from agent.loop import PolicyDecision, ProposedCall
from agent.mcp import GATEWAY_TOOL, McpPool, McpToolbox
from agent.mcp.catalogue import exposed_name
from agent.tools import CombinedToolbox, SqlToolbox, WorkspaceToolbox
from chatapp.services import mcp_oauth, policies
from chatapp.services.demo_database import sql_backend
from chatapp.services.mcp_catalogues import keep_catalogue, known_catalogues
from chatapp.services.mcp_config import enabled_configs, host_servers, user_configs
from chatapp.services.policy_toolbox import PolicyToolbox
from chatapp.worker.runtime import WorkerRuntime
from chatapp.workspaces import prepare_workspace


class DbPolicy:
    """The loop's policy hook, answering from the rules the toolbox resolved for this run.

    An admin's ``max_calls_per_run`` is counted from the run's state (``ProposedCall.executed_before``),
    which holds every stored status and is rebuilt from them on a resume, so it holds across resumes
    without a read per call (docs/performance.md, session 9).
    """

    def __init__(
        self, toolbox: PolicyToolbox, runtime: WorkerRuntime | None = None, run_id: int | None = None
    ) -> None:
        self.toolbox = toolbox
        self.runtime = runtime
        self.run_id = run_id

    def _gateway_rule(self, server: str, tool: str) -> policies.Rule:
        """Behind the gateway the real tool is in the arguments: its own policy applies, whether the
        admin wrote it for the name the tool is listed under (sanitised/shortened, as in traces and
        the admin's tool listing) or for the raw remote name; a disabling rule on either wins (L1)."""
        names = dict.fromkeys((exposed_name(server, tool), f"{server}__{tool}"))
        matched = [r for r in (policies.match(self.toolbox.rules, n) for n in names) if r is not None]
        for rule in matched:
            if not rule.enabled:
                return rule
        if matched:
            return matched[0]
        return policies.default_rule("high", server, server in self.toolbox.trusted, {})

    async def check(self, call: ProposedCall) -> PolicyDecision:
        rule = self.toolbox.effective.get(call.name)
        if call.name == GATEWAY_TOOL:
            rule = self._gateway_rule(str(call.arguments.get("server")), str(call.arguments.get("tool")))
        if rule is None or not rule.enabled:
            return PolicyDecision("deny", f"{call.name} is disabled by the administrator")
        if rule.max_calls_per_run and call.executed_before >= rule.max_calls_per_run:
            return PolicyDecision(
                "deny", f"{call.name} may run at most {rule.max_calls_per_run} times per run (admin policy)"
            )
        if rule.needs_approval:
            return PolicyDecision(
                "needs_approval", f"{call.name} is {rule.tier} risk and needs an admin's approval"
            )
        return PolicyDecision("allow")


async def mcp_pool(runtime: WorkerRuntime) -> McpPool:
    pool = runtime.resources.get("mcp_pool")
    if pool is None:
        pool = McpPool(log_dir=Path(settings.DATA_DIR) / "logs" / "mcp")
        runtime.resources["mcp_pool"] = pool
        runtime.on_close(pool.aclose)
    return pool


async def refresh_catalogues(pool: McpPool, servers: set[str]) -> None:
    """Re-list these servers' tools now; a server that cannot answer keeps its cache (its calls then
    fail on their own, with the reason)."""
    for name in sorted(servers & set(pool.servers)):
        try:
            await pool.catalogue(name, refresh=True)
        except Exception:  # noqa: BLE001 - one unreachable server must not stop the others' refresh
            logging.getLogger(__name__).warning("re-listing %s before approved calls failed", name)


class SignInRequired(Exception):
    """A run needs OAuth sign-ins before it can go on (``servers``: id, name, and who signs in)."""

    def __init__(self, servers: list[dict]) -> None:
        super().__init__("waiting for a sign-in to " + ", ".join(s["name"] for s in servers))
        self.servers = servers


def _load_host_config(
    workspace: Path | None = None, owner_id: int | None = None, switched_off: frozenset = frozenset()
) -> tuple[list, list, list, set[str], Any, dict]:
    mine: list = []
    servers = host_servers()  # one read for the four questions below
    known = known_catalogues(servers=servers)
    if owner_id is not None:
        # An OAuth server whose tools were seen before is offered from that list and asks for the
        # sign-in when one of its tools is called; one nobody has listed yet is waited for here.
        waiting = mcp_oauth.sign_ins_needed(owner_id, switched_off, servers=servers)
        needed = [s for s in waiting if s["name"] not in known]
        if needed:
            raise SignInRequired(needed)
        mine = user_configs(owner_id, servers)
    configs = enabled_configs(servers)
    if workspace is not None and owner_id is not None:
        prepare_workspace(workspace, owner_id)  # same trip to a DB thread: one hop, not two
    trusted = {c.name for c in configs + mine if c.trusted}
    return configs, mine, policies.load_rules(), trusted, sql_backend(), known


async def user_pool(runtime: WorkerRuntime, user_id: int) -> McpPool:
    """The sessions of "each user signs in" servers carry the user's token: one pool per user."""
    key = f"mcp_pool_user_{user_id}"
    pool = runtime.resources.get(key)
    if pool is None:
        pool = McpPool(log_dir=Path(settings.DATA_DIR) / "logs" / "mcp")
        runtime.resources[key] = pool
        runtime.on_close(pool.aclose)
    return pool


def host_config_for(ctx: Any) -> tuple | SignInRequired:
    """The run's host configuration (``_load_host_config``), read on a DB thread right after its
    context, in the same hop (docs/performance.md); a sign-in the run needs is returned, and raised
    by ``build_toolbox`` where the driver handles it."""
    toggles = (ctx.tool_settings or {}).get("servers") or {}
    off = frozenset(name for name, on in toggles.items() if on is False)
    try:
        return _load_host_config(Path(ctx.workspace), ctx.owner_id, off)
    except SignInRequired as wait:
        return wait


async def build_toolbox(
    runtime: WorkerRuntime, ctx: Any, loaded: tuple | SignInRequired | None = None
) -> PolicyToolbox:
    """Raises ``SignInRequired`` when an OAuth server of the run has no valid grant (the run waits).
    ``loaded``: the host configuration read with the context (``host_config_for``), else read here."""
    workspace = Path(ctx.workspace)
    if loaded is None:
        loaded = await runtime.db(host_config_for, ctx)
    if isinstance(loaded, SignInRequired):
        raise loaded
    configs, mine, rules, trusted, backend, known = loaded
    pool = await mcp_pool(runtime)
    parts: list[Any] = [WorkspaceToolbox(workspace), SqlToolbox(backend)]
    overrides = {pattern: rule.description for pattern, rule in rules if rule.description}
    oauth = {c.name for c in configs + mine if c.auth is not None}

    async def listed(catalogue: Any) -> None:
        if catalogue.server in oauth:  # only OAuth servers' lists are kept (for the signed-out)
            await runtime.db(keep_catalogue, catalogue)

    def mcp(servers_pool: McpPool, servers: list) -> McpToolbox:
        return McpToolbox(
            servers_pool, servers, description_overrides=overrides, known=known, on_listed=listed
        )

    if configs:
        parts.append(mcp(pool, configs))
    if mine:
        parts.append(mcp(await user_pool(runtime, ctx.owner_id), mine))
    box = PolicyToolbox(CombinedToolbox(parts), rules, trusted, ctx.tool_settings)
    ctx.toolbox = box
    return box


def build_policy(ctx: Any, runtime: WorkerRuntime | None = None) -> DbPolicy:
    return DbPolicy(ctx.toolbox, runtime, ctx.run_id)
