"""What a run is offered: the admin's policies and the conversation's toggles applied to the tools
an inner toolbox lists (R-LOOP-8, R-TOOL-2). The worker wraps every run's toolbox in it; the admin's
probe shapes a server's listing with it, so both show the same tools, tiers and descriptions.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agent.mcp.catalogue import definition_hash
from agent.messages import ToolSpec
from agent.toolbox import ToolContext, ToolInfo, ToolOutcome
from chatapp.services import policies


class PolicyToolbox:
    """Applies policies and the conversation's toggles to what an inner toolbox offers."""

    def __init__(self, inner: Any, rules: list, trusted: set[str], toggles: dict[str, Any]) -> None:
        self.inner = inner
        self.rules = rules
        self.trusted = trusted
        self.toggles = toggles or {}
        self.effective: dict[str, policies.Rule] = {}
        self.infos: dict[str, ToolInfo] = {}

    def _offered(self, info: ToolInfo) -> bool:
        servers = self.toggles.get("servers", {})
        tools = self.toggles.get("tools", {})
        if info.server and servers.get(info.server) is False:
            return False
        return tools.get(info.spec.name) is not False

    async def list_tools(self) -> list[ToolInfo]:
        offered = []
        for info in await self.inner.list_tools():
            rule = policies.match(self.rules, info.spec.name) or policies.default_rule(
                info.risk, info.server, info.server in self.trusted, info.hints
            )
            self.effective[info.spec.name] = rule
            if not rule.enabled or not self._offered(info) or info.disabled_reason:
                continue
            spec, digest = info.spec, info.definition_hash
            if rule.description:
                # The model reads the override, so approvals bind to it too.
                spec = ToolSpec(spec.name, rule.description, spec.parameters)
                digest = definition_hash(spec.name, spec.description, spec.parameters)
            offered.append(dataclasses.replace(info, spec=spec, risk=rule.tier, definition_hash=digest))
        self.infos.clear()
        self.infos.update({info.spec.name: info for info in offered})
        return offered

    async def execute(self, name: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        return await self.inner.execute(name, arguments, ctx)
