"""McpServerConfig: one MCP server as the host configures it (a plain value, no Django)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

TransportKind = Literal["stdio", "http", "sse"]
_SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")


class McpConfigError(ValueError):
    """A server configuration that cannot work (bad slug, missing command or URL ...).

    ``code`` names the rule and ``params`` its values (``server`` is the entry's name), so a host can
    say it in its own language (chatapp/admin/engine_errors.py); the message stays the English one.
    """

    def __init__(self, message: str, code: str = "", **params: Any) -> None:
        super().__init__(message)
        self.code = code
        self.params = params


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One server. ``name`` is its slug and the namespace of its tools (``name__tool``).

    * ``transport="stdio"``: ``command`` and ``args`` (an argv list, never a shell line) and ``env``
      (added to the child's minimal environment: PATH, HOME ...; secrets must be passed here).
    * ``transport="http"`` (Streamable HTTP) or ``"sse"`` (legacy HTTP+SSE): ``url`` and ``headers``.
    * ``gateway``: expose the server through ``mcp_call_tool`` instead of one tool per server tool.
    * ``trusted``: the host may let its annotations (readOnlyHint ...) inform policy; untrusted
      annotations are only shown as hints (MCP spec: annotations from untrusted servers are untrusted).
    * ``connect_timeout`` bounds spawn + handshake; ``call_timeout`` is the default per call.
    * ``auth``: how HTTP requests are authorised beyond static headers (docs/tools-and-mcp.md, OAuth).
    """

    name: str
    transport: TransportKind = "stdio"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    enabled: bool = True
    connect_timeout: float = 15.0
    call_timeout: float = 60.0
    gateway: bool = False
    trusted: bool = False
    # HTTP transports: an ``httpx2.Auth`` the requests go through, e.g. the SDK's
    # ``mcp.client.auth.OAuthClientProvider`` (OAuth 2.1: discovery, PKCE, resource, refresh).
    auth: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not _SLUG_RE.match(self.name) or "__" in self.name:
            raise McpConfigError(
                f"server name {self.name!r} must be a slug: lowercase letters, digits, '-' or '_', "
                "at most 32 characters, no '__' (it separates server and tool names)",
                "name",
                server=self.name,
            )
        if self.transport not in ("stdio", "http", "sse"):
            raise McpConfigError(
                f"{self.name}: unknown transport {self.transport!r}",
                "transport",
                server=self.name,
                transport=self.transport,
            )
        if self.transport == "stdio" and not self.command:
            raise McpConfigError(f"{self.name}: a stdio server needs a command", "command", server=self.name)
        if self.transport != "stdio" and not (self.url and self.url.startswith(("http://", "https://"))):
            raise McpConfigError(
                f"{self.name}: an {self.transport} server needs an http(s) url",
                "url",
                server=self.name,
                transport=self.transport,
            )
        if self.connect_timeout <= 0 or self.call_timeout <= 0:
            raise McpConfigError(f"{self.name}: timeouts must be positive", "timeouts", server=self.name)
        # A list given by a caller would make the frozen value mutable and unhashable.
        object.__setattr__(self, "args", tuple(self.args))
