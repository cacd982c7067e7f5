"""Per-conversation tool toggles: which MCP servers and built-in tools are offered to the model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from chatapp.models import Conversation, McpServer

BUILT_INS = ("read_file", "search_files", "write_file", "append_file", "query_database")


@dataclass(frozen=True)
class Toggle:
    field: str
    label: str
    on: bool


def tool_toggles(convo: Conversation) -> list[Toggle]:
    settings = convo.tool_settings or {}
    servers, tools = settings.get("servers", {}), settings.get("tools", {})
    toggles = [Toggle(f"tool:{name}", name, tools.get(name) is not False) for name in BUILT_INS]
    for server in McpServer.objects.filter(enabled=True):
        toggles.append(
            Toggle(
                f"server:{server.name}",
                _("%(name)s (MCP server)") % {"name": server.name},
                servers.get(server.name) is not False,
            )
        )
    return toggles


def save_toggles(convo: Conversation, data: Any) -> None:
    servers = {s.name: data.get(f"server:{s.name}") == "on" for s in McpServer.objects.filter(enabled=True)}
    tools = {name: data.get(f"tool:{name}") == "on" for name in BUILT_INS}
    convo.tool_settings = {"servers": servers, "tools": tools}
