"""The tool lists of OAuth MCP servers as last seen, kept for users who have not signed in yet.

A per-user server's tools are only listable with a user's token; a user who has not signed in is
offered the list some session saw last (``McpServer.tools_seen``), so the model can choose a tool
and the sign-in is asked for when it is called (issue 13: "the first time a tool of that server is
needed"). Any session's fresh listing replaces the kept one when it differs (the worker's
``McpToolbox.on_listed``, the admin's Test connection). Servers nobody has listed yet have no kept
catalogue: a run then waits for the sign-in at its start (the tools cannot be offered unseen).
"""

from __future__ import annotations

import dataclasses

from agent.mcp import Catalogue, CatalogueEntry
from chatapp.models import McpServer


def known_catalogues(
    names: set[str] | None = None, servers: list[McpServer] | None = None
) -> dict[str, Catalogue]:
    """The kept catalogues of enabled OAuth servers (all of them, or those in ``names``).
    ``servers``: the rows, already read (``mcp_config.host_servers``), to pick from instead."""
    if servers is not None:
        kept = [(s.name, s.tools_seen) for s in servers if s.auth_mode != McpServer.AuthMode.NONE]
        pairs = [(n, seen) for n, seen in kept if seen != [] and (names is None or n in names)]
    else:
        rows = McpServer.objects.exclude(auth_mode=McpServer.AuthMode.NONE).exclude(tools_seen=[])
        if names is not None:
            rows = rows.filter(name__in=names)
        pairs = list(rows.values_list("name", "tools_seen"))
    found = {}
    for name, seen in pairs:
        try:
            entries = tuple(CatalogueEntry(**entry) for entry in seen)
        except TypeError:  # kept by an older version with other fields: wait for a fresh listing
            continue
        found[name] = Catalogue(server=name, entries=entries, generation=0)
    return found


def keep_catalogue(catalogue: Catalogue) -> bool:
    """Keep a fresh listing of an OAuth server; False for servers without OAuth (nothing kept)."""
    seen = [dataclasses.asdict(entry) for entry in catalogue.entries]
    return bool(
        McpServer.objects.filter(name=catalogue.server)
        .exclude(auth_mode=McpServer.AuthMode.NONE)
        .update(tools_seen=seen)
    )
