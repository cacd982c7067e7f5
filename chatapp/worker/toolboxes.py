"""The tools a run is offered, and the policy that guards them (filled in by the tools issue)."""

from __future__ import annotations

from typing import Any

from agent.loop import RiskPolicy
from agent.toolbox import ToolContext, ToolInfo, ToolOutcome


class NoTools:
    async def list_tools(self) -> list[ToolInfo]:
        return []

    async def execute(self, name: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        return ToolOutcome.failure("unknown_tool", f"no tool named {name}")


async def build_toolbox(runtime: Any, ctx: Any) -> Any:
    return NoTools()


def build_policy(ctx: Any) -> Any:
    return RiskPolicy()
