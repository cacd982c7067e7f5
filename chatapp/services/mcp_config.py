"""McpServer rows as the engine's ``McpServerConfig`` values, and back to the mcpServers JSON."""

from __future__ import annotations

import dataclasses
import os
from typing import cast

from django.db import connection
from django.db.models import Q

from agent.mcp import McpServerConfig
from agent.mcp.config import TransportKind
from chatapp import row_sql
from chatapp.models import McpServer
from chatapp.redaction import register_secret
from chatapp.services import mcp_oauth

ENV_PREFIX = "env:"
# Only the metadata of a client that never signed in carries it; the SDK sends it to nobody.
DEFAULT_REDIRECT = "http://localhost/mcp/oauth/callback/"


def _resolve(values: dict[str, str]) -> dict[str, str]:
    """Values written as ``env:NAME`` are read from the worker's environment, never stored."""
    out = {}
    for key, value in (values or {}).items():
        if isinstance(value, str) and value.startswith(ENV_PREFIX):
            value = os.environ.get(value[len(ENV_PREFIX) :], "")
            register_secret(value)
        out[str(key)] = str(value)
    return out


def _auth(server: McpServer):
    """The OAuth provider of a "one connection for everyone" server (the grant an admin signed in);
    a worker only uses and refreshes it, and marks it "sign in again" when that is needed."""
    if server.auth_mode != McpServer.AuthMode.SHARED:
        return None
    info = mcp_oauth.read_client_info(server.id, None)
    redirect_uri = str(info.redirect_uris[0]) if info and info.redirect_uris else DEFAULT_REDIRECT
    return mcp_oauth.worker_auth(server, None, redirect_uri)


def to_config(server: McpServer) -> McpServerConfig:
    return McpServerConfig(
        name=server.name,
        transport=cast(TransportKind, server.transport),  # one of McpServer.transport's choices
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
        auth=_auth(server),
    )


def host_servers() -> list[McpServer]:
    """Every server a run's host configuration looks at (the enabled ones and every OAuth one), in
    one read: ``enabled_configs``, ``user_configs``, ``known_catalogues`` and ``sign_ins_needed``
    pick from it instead of reading four times per run (docs/performance.md, session 9)."""
    if connection.vendor == "postgresql":
        # Written out once: the ORM's query building was most of this read's CPU at every run's
        # start (docs/performance.md, session 17; tests/worker/test_host_rows.py).
        return row_sql.all_rows(McpServer, "t.enabled OR t.auth_mode <> %s", (McpServer.AuthMode.NONE,))
    return list(McpServer.objects.filter(Q(enabled=True) | ~Q(auth_mode=McpServer.AuthMode.NONE)))


def enabled_configs(servers: list[McpServer] | None = None) -> list[McpServerConfig]:
    """The servers every run shares (a per-user server has a session per user: ``user_configs``)."""
    per_user = McpServer.AuthMode.PER_USER
    if servers is None:
        servers = list(McpServer.objects.filter(enabled=True).exclude(auth_mode=per_user))
    return [to_config(s) for s in servers if s.enabled and s.auth_mode != per_user]


def user_configs(user_id: int, servers: list[McpServer] | None = None) -> list[McpServerConfig]:
    """The "each user signs in" servers as this user's sessions see them (the user's own grant)."""
    per_user = McpServer.AuthMode.PER_USER
    if servers is None:
        servers = list(McpServer.objects.filter(enabled=True, auth_mode=per_user))
    return [user_config(s, user_id) for s in servers if s.enabled and s.auth_mode == per_user]


def user_config(server: McpServer, user_id: int) -> McpServerConfig:
    """``to_config``, with this user's grant when the server is "each user signs in"."""
    config = to_config(server)
    if server.auth_mode != McpServer.AuthMode.PER_USER:
        return config
    info = mcp_oauth.read_client_info(server.id, user_id)
    redirect_uri = str(info.redirect_uris[0]) if info and info.redirect_uris else DEFAULT_REDIRECT
    return dataclasses.replace(config, auth=mcp_oauth.worker_auth(server, user_id, redirect_uri))
