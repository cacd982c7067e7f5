"""The ``mcpServers`` JSON of Claude Desktop / Cursor / VS Code, in and out (pure functions).

    {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"], "env": {}},
                    "remote": {"url": "https://example.com/mcp", "headers": {...}, "type": "http"}}}

Names become slugs (``"My Server"`` -> ``my-server``) because they are the tool namespace.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from agent.mcp.config import McpConfigError, McpServerConfig, TransportKind

_TYPE_ALIASES: dict[str, TransportKind] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamablehttp": "http",
    "sse": "sse",
}


def slugify(name: str) -> str:
    """A server name as a namespace slug: lowercase, ``[a-z0-9_-]``, no ``__``, at most 32 chars."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", name.strip().lower())
    slug = re.sub(r"_{2,}", "_", slug).strip("-_")[:32].strip("-_")
    if not slug:
        raise McpConfigError(f"server name {name!r} has no usable characters", "no_slug", server=name)
    return slug


def parse_mcp_servers(data: str | Mapping[str, Any]) -> list[McpServerConfig]:
    """Read an ``mcpServers`` document (text or already-parsed) into configs.

    Raises ``McpConfigError`` naming the entry for anything malformed; unknown keys are ignored so
    files written for other clients still load.
    """
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise McpConfigError(f"not valid JSON: {exc}", "json", detail=str(exc)) from None
    if not isinstance(data, Mapping):
        raise McpConfigError("expected a JSON object", "document")
    servers = data.get("mcpServers", data.get("servers"))
    if not isinstance(servers, Mapping):
        raise McpConfigError('expected an object under "mcpServers"', "servers")
    configs: list[McpServerConfig] = []
    seen: dict[str, str] = {}
    for raw_name, entry in servers.items():
        config = _parse_entry(str(raw_name), entry)
        if config.name in seen:
            raise McpConfigError(
                f"servers {seen[config.name]!r} and {raw_name!r} share the slug {config.name!r}",
                "same_slug",
                first=seen[config.name],
                second=str(raw_name),
                slug=config.name,
            )
        seen[config.name] = str(raw_name)
        configs.append(config)
    return configs


def _str_map(value: Any, what: str, name: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(v, str | int | float) for v in value.values()):
        raise McpConfigError(
            f"{name}: {what} must be an object of strings", "strings", server=name, field=what
        )
    return {str(k): str(v) for k, v in value.items()}


def _parse_entry(raw_name: str, entry: Any) -> McpServerConfig:
    if not isinstance(entry, Mapping):
        raise McpConfigError(f"{raw_name}: entry must be an object", "entry", server=raw_name)
    name = slugify(raw_name)
    kind = str(entry.get("type") or entry.get("transport") or "").lower()
    enabled = not bool(entry.get("disabled", False))
    if "command" in entry or kind == "stdio":
        args = entry.get("args") or []
        if not isinstance(entry.get("command"), str) or not isinstance(args, list):
            raise McpConfigError(
                f"{raw_name}: command must be a string and args a list", "command_args", server=raw_name
            )
        return McpServerConfig(
            name=name,
            transport="stdio",
            command=entry["command"],
            args=tuple(str(a) for a in args),
            env=_str_map(entry.get("env"), "env", raw_name),
            enabled=enabled,
        )
    url = entry.get("url") or entry.get("serverUrl")
    if not isinstance(url, str):
        raise McpConfigError(
            f"{raw_name}: needs either a command or a url", "command_or_url", server=raw_name
        )
    transport = _TYPE_ALIASES.get(kind) if kind else ("sse" if url.rstrip("/").endswith("/sse") else "http")
    if transport is None:
        raise McpConfigError(f"{raw_name}: unknown type {kind!r}", "type", server=raw_name, kind=kind)
    return McpServerConfig(
        name=name,
        transport=transport,
        url=url,
        headers=_str_map(entry.get("headers"), "headers", raw_name),
        enabled=enabled,
    )


def dump_mcp_servers(configs: Iterable[McpServerConfig]) -> dict[str, Any]:
    """The configs as an ``mcpServers`` document (``json.dumps`` it to write a file)."""
    servers: dict[str, Any] = {}
    for config in configs:
        entry: dict[str, Any]
        if config.transport == "stdio":
            entry = {"command": config.command, "args": list(config.args)}
            if config.env:
                entry["env"] = dict(config.env)
        else:
            entry = {"type": config.transport, "url": config.url}
            if config.headers:
                entry["headers"] = dict(config.headers)
        if not config.enabled:
            entry["disabled"] = True
        servers[config.name] = entry
    return {"mcpServers": servers}
