"""MCP resources and prompts for the chat page (R-MCP-7), fetched in the worker that owns the pool.

The web process never talks to MCP servers itself: it asks these tasks and waits briefly for the
answer (Redis result backend). Results are plain JSON, capped, with text only.
"""

from __future__ import annotations

from typing import Any

from agent.mcp.errors import UnknownServerError
from chatapp.services.mcp_config import enabled_configs
from chatapp.worker.runtime import get_runtime
from chatapp.worker.toolboxes import mcp_pool

MAX_RESOURCE_CHARS = 20_000


async def _pool() -> tuple[Any, list[str]]:
    """The worker's pool, in step with the database: enabled servers configured, the others removed.

    Only the enabled servers' names are returned and accepted (issue 16, M2): a server the admin
    disabled or deleted is contacted for nobody, whatever the worker's pool still held.
    """
    runtime = get_runtime()
    pool = await mcp_pool(runtime)
    configs = await runtime.db(enabled_configs)
    enabled = [c.name for c in configs]
    for config in configs:
        if config.name not in pool.servers or pool.config(config.name) != config:
            pool.configure(config)
    for name in [n for n in pool.servers if n not in enabled]:
        await pool.remove(name)
    return pool, enabled


async def _enabled_pool(server: str) -> Any:
    pool, enabled = await _pool()
    if server not in enabled:
        raise UnknownServerError(server, "not enabled")
    return pool


async def list_context() -> dict[str, Any]:
    pool, enabled = await _pool()
    servers: dict[str, Any] = {}
    for name in enabled:
        entry: dict[str, Any] = {"resources": [], "prompts": [], "error": None}
        try:
            entry["resources"] = [
                {"uri": str(r.uri), "name": r.name, "description": r.description or "", "mime": r.mime_type}
                for r in await pool.list_resources(name)
            ]
            entry["prompts"] = [
                {
                    "name": p.name,
                    "description": p.description or "",
                    "arguments": [{"name": a.name, "required": bool(a.required)} for a in p.arguments or []],
                }
                for p in await pool.list_prompts(name)
            ]
        except Exception as exc:  # noqa: BLE001 - one server's failure is shown, the others still listed
            entry["error"] = f"{type(exc).__name__}: {exc}"
        servers[name] = entry
    return servers


def _text_of(contents: list[Any]) -> str:
    parts = []
    for item in contents:
        text = getattr(item, "text", None)
        parts.append(
            text if text is not None else f"[binary {getattr(item, 'mime_type', '')} content omitted]"
        )
    joined = "\n".join(parts)
    if len(joined) > MAX_RESOURCE_CHARS:
        cut = len(joined) - MAX_RESOURCE_CHARS
        joined = joined[:MAX_RESOURCE_CHARS] + f"\n[… {cut} characters cut]"
    return joined


async def read_resource(server: str, uri: str) -> dict[str, Any]:
    pool = await _enabled_pool(server)
    result = await pool.read_resource(server, uri)
    return {"server": server, "uri": uri, "text": _text_of(result.contents)}


async def expand_prompt(server: str, name: str, arguments: dict[str, str]) -> dict[str, Any]:
    pool = await _enabled_pool(server)
    result = await pool.get_prompt(server, name, arguments)
    texts = []
    for message in result.messages:
        content = message.content
        texts.append(getattr(content, "text", None) or f"[{getattr(content, 'type', 'content')} omitted]")
    return {"text": "\n\n".join(texts)}
