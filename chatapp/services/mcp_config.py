"""McpServer rows as the engine's ``McpServerConfig`` values, and back to the mcpServers JSON."""

from __future__ import annotations

import os

from agent.mcp import McpServerConfig
from chatapp.models import McpServer
from chatapp.redaction import register_secret

ENV_PREFIX = "env:"


def _resolve(values: dict[str, str]) -> dict[str, str]:
    """Values written as ``env:NAME`` are read from the worker's environment, never stored."""
    out = {}
    for key, value in (values or {}).items():
        if isinstance(value, str) and value.startswith(ENV_PREFIX):
            value = os.environ.get(value[len(ENV_PREFIX) :], "")
            register_secret(value)
        out[str(key)] = str(value)
    return out


def to_config(server: McpServer) -> McpServerConfig:
    return McpServerConfig(
        name=server.name,
        transport=server.transport,
        command=server.command or None,
        args=tuple(str(a) for a in server.args or ()),
        env=_resolve(server.env),
        url=server.url or None,
        headers=_resolve(server.headers),
        enabled=server.enabled,
        connect_timeout=server.connect_timeout,
        call_timeout=server.call_timeout,
        gateway=server.gateway,
        trusted=server.trusted,
    )


def enabled_configs() -> list[McpServerConfig]:
    return [to_config(s) for s in McpServer.objects.filter(enabled=True)]
