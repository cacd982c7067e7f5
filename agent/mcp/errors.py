"""Errors of the MCP layer, and the one place where SDK errors are mapped to them.

McpError
 ├── UnknownServerError        no server configured under that name
 ├── ServerUnavailableError    could not start / connect / handshake (or waiting out a backoff)
 │    └── ServerStartTimeoutError   start or initialize did not finish in connect_timeout
 ├── CallTimeoutError          the call ran past its timeout (the server was told to cancel)
 ├── ConnectionLostError       the server went away while the call was in flight
 └── RemoteError               a JSON-RPC error answer (code, message), or an invalid result
"""

from __future__ import annotations

from mcp import MCPError
from mcp.types import CONNECTION_CLOSED, INVALID_PARAMS, METHOD_NOT_FOUND, REQUEST_TIMEOUT


class McpError(Exception):
    """Base of every error this package raises about a server."""

    def __init__(self, server: str, message: str) -> None:
        super().__init__(f"MCP server {server!r}: {message}")
        self.server = server
        self.detail = message


class UnknownServerError(McpError):
    pass


class ServerUnavailableError(McpError):
    pass


class ServerStartTimeoutError(ServerUnavailableError):
    pass


class CallTimeoutError(McpError):
    pass


class ConnectionLostError(McpError):
    pass


class RemoteError(McpError):
    def __init__(self, server: str, message: str, code: int | None = None) -> None:
        super().__init__(server, message)
        self.code = code

    @property
    def invalid_params(self) -> bool:
        return self.code == INVALID_PARAMS

    @property
    def method_not_found(self) -> bool:
        return self.code == METHOD_NOT_FOUND


# The streamable-HTTP transport answers a request on a session the server forgot with -32600.
_SESSION_GONE = "session terminated"


def from_sdk_error(server: str, exc: MCPError, what: str) -> McpError:
    """Map an ``MCPError`` raised by the SDK while doing ``what`` to the most specific local error."""
    if exc.code == REQUEST_TIMEOUT:
        return CallTimeoutError(server, f"{what} timed out; the server was asked to cancel it")
    if exc.code == CONNECTION_CLOSED or _SESSION_GONE in (exc.message or "").lower():
        return ConnectionLostError(server, f"connection closed during {what} (server exited or crashed)")
    return RemoteError(server, f"{what} failed: {exc.message} (JSON-RPC {exc.code})", exc.code)


def first_leaf(exc: BaseException) -> BaseException:
    """The first non-group exception inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
