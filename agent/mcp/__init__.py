"""The MCP client side: server configs, the session pool, the catalogue, result mapping, gateway.

Host entry points: ``McpServerConfig``, ``parse_mcp_servers`` / ``dump_mcp_servers``, ``McpPool``
(one per worker process, on its asyncio loop) and ``McpToolbox(pool, servers)``.
"""

from agent.mcp.catalogue import Catalogue, CatalogueEntry
from agent.mcp.config import McpConfigError, McpServerConfig
from agent.mcp.config_json import dump_mcp_servers, parse_mcp_servers, slugify
from agent.mcp.errors import (
    CallTimeoutError,
    ConnectionLostError,
    LinkRequiredError,
    McpError,
    RemoteError,
    ServerStartTimeoutError,
    ServerUnavailableError,
    SessionExpiredError,
    SignInRequiredError,
    UnknownServerError,
)
from agent.mcp.gateway import GATEWAY_TOOL
from agent.mcp.pool import McpPool
from agent.mcp.results import map_call_result
from agent.mcp.toolbox import McpToolbox

__all__ = [
    "GATEWAY_TOOL",
    "CallTimeoutError",
    "Catalogue",
    "CatalogueEntry",
    "ConnectionLostError",
    "LinkRequiredError",
    "McpConfigError",
    "McpError",
    "McpPool",
    "McpServerConfig",
    "McpToolbox",
    "RemoteError",
    "ServerStartTimeoutError",
    "ServerUnavailableError",
    "SessionExpiredError",
    "SignInRequiredError",
    "UnknownServerError",
    "dump_mcp_servers",
    "map_call_result",
    "parse_mcp_servers",
    "slugify",
]
