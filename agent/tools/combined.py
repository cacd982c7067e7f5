"""CombinedToolbox: several toolboxes side by side, one name space for the model.

Names must be unique across the parts (MCP tools are always ``server__tool`` so they cannot clash
with built-ins); a clash is a configuration error raised when the tools are listed, not something
to resolve silently by picking one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent.toolbox import Toolbox, ToolContext, ToolInfo, ToolOutcome


class DuplicateToolError(Exception):
    """Two toolboxes offer a tool under the same name."""


class CombinedToolbox:
    def __init__(self, parts: Sequence[Toolbox]) -> None:
        self.parts = list(parts)
        self._owner: dict[str, Toolbox] = {}

    async def list_tools(self) -> list[ToolInfo]:
        tools: list[ToolInfo] = []
        owner: dict[str, Toolbox] = {}
        for part in self.parts:
            for info in await part.list_tools():
                if info.spec.name in owner:
                    raise DuplicateToolError(f"tool name {info.spec.name!r} offered twice")
                owner[info.spec.name] = part
                tools.append(info)
        self._owner = owner
        return tools

    async def execute(self, name: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        part = self._owner.get(name)
        if part is None:
            await self.list_tools()  # the loop may execute before listing (e.g. resuming a run)
            part = self._owner.get(name)
        if part is None:
            return ToolOutcome.failure("unknown_tool", f"no tool named {name!r}")
        return await part.execute(name, arguments, ctx)
