"""McpServer rows to and from the ``mcpServers`` JSON of Claude Desktop / Cursor / VS Code.

One code path for the admin's import view / export action and ``manage.py mcp_import`` /
``mcp_export``. Parsing is ``agent.mcp.parse_mcp_servers`` and writing ``dump_mcp_servers``; this
module only maps rows.

Secrets: an ``env`` or ``headers`` value written ``env:NAME`` is a reference (the worker reads the
variable) and is exported as it is. A literal value may be a token, so unless the caller asks for
secrets it is exported as a placeholder ``env:NAME`` (NAME derived from the server and the key, and
listed in ``Export.masked`` so the admin knows which variables to set before importing elsewhere).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from django.db import transaction

from agent.mcp import McpConfigError, McpServerConfig, dump_mcp_servers, parse_mcp_servers
from agent.mcp.config import TransportKind
from chatapp.models import McpServer
from chatapp.services.engine_errors import engine_message
from chatapp.services.mcp_config import ENV_PREFIX

# Fields the mcpServers format carries; the others (timeouts, gateway, trusted) keep their value on
# update and their default on create.
IMPORTED_FIELDS = ("transport", "command", "args", "env", "url", "headers", "enabled")


@dataclass(frozen=True, slots=True)
class Imported:
    name: str
    action: str  # created | updated | unchanged
    transport: str


def _row_values(config: McpServerConfig) -> dict[str, Any]:
    return {
        "transport": config.transport,
        "command": config.command or "",
        "args": list(config.args),
        "env": dict(config.env),
        "url": config.url or "",
        "headers": dict(config.headers),
        "enabled": config.enabled,
    }


def import_servers(data: str | Mapping[str, Any]) -> list[Imported]:
    """Create or update one row per server of the document; all or nothing.

    Raises ``McpConfigError`` (with the entry's name) for bad JSON or a malformed entry; nothing is
    written then.
    """
    configs = parse_mcp_servers(data)
    done: list[Imported] = []
    with transaction.atomic():
        for config in configs:
            values = _row_values(config)
            row = McpServer.objects.select_for_update().filter(name=config.name).first()
            if row is None:
                McpServer.objects.create(name=config.name, **values)
                action = "created"
            elif all(getattr(row, key) == value for key, value in values.items()):
                action = "unchanged"
            else:
                for key, value in values.items():
                    setattr(row, key, value)
                row.save(update_fields=list(IMPORTED_FIELDS))
                action = "updated"
            done.append(Imported(config.name, action, config.transport))
    return done


@dataclass(slots=True)
class Export:
    document: dict[str, Any]
    masked: list[str] = field(default_factory=list)  # "server: env KEY -> env:NAME"
    skipped: list[str] = field(default_factory=list)  # rows that are not a valid server config


def placeholder(server: str, key: str, where: str) -> str:
    """The variable name a masked value is exported as, e.g. ``GITHUB_TOKEN`` or ``REMOTE_AUTHORIZATION``."""
    base = key if where == "env" else f"{server}_{key}"
    return re.sub(r"[^A-Z0-9_]+", "_", base.upper()).strip("_") or "SECRET"


def _mask(server: str, values: Mapping[str, Any], where: str, masked: list[str]) -> dict[str, str]:
    out = {}
    for key, value in (values or {}).items():
        value = str(value)
        if value.startswith(ENV_PREFIX):
            out[str(key)] = value
        else:
            out[str(key)] = f"{ENV_PREFIX}{placeholder(server, str(key), where)}"
            masked.append(f"{server}: {where} {key} -> {out[str(key)]}")
    return out


def export_servers(rows: Iterable[McpServer], *, include_secrets: bool = False) -> Export:
    """The rows as an ``mcpServers`` document; ``env:NAME`` references are never resolved."""
    result = Export(document={})
    configs = []
    for row in rows:
        env = {str(k): str(v) for k, v in (row.env or {}).items()}
        headers = {str(k): str(v) for k, v in (row.headers or {}).items()}
        if not include_secrets:
            env = _mask(row.name, env, "env", result.masked)
            headers = _mask(row.name, headers, "header", result.masked)
        try:
            configs.append(
                McpServerConfig(
                    name=row.name,
                    transport=cast(TransportKind, row.transport),
                    command=row.command or None,
                    args=tuple(str(a) for a in row.args or ()),
                    env=env,
                    url=row.url or None,
                    headers=headers,
                    enabled=row.enabled,
                )
            )
        except McpConfigError as exc:
            result.skipped.append(engine_message(exc))  # in the admin's language
    result.document = dump_mcp_servers(configs)
    return result
