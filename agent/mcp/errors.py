"""Errors of the MCP layer, and the one place where SDK errors are mapped to them.

McpError
 ├── UnknownServerError        no server configured under that name
 ├── ServerUnavailableError    could not start / connect / handshake (or waiting out a backoff)
 │    ├── ServerStartTimeoutError   start or initialize did not finish in connect_timeout
 │    └── SignInRequiredError       OAuth: a person must sign in first; the request was not sent
 ├── CallTimeoutError          the call ran past its timeout (the server was told to cancel)
 ├── ConnectionLostError       the server went away while the call was in flight
 ├── SessionExpiredError       HTTP 404 on a request carrying Mcp-Session-Id: the server forgot the
 │                             session, so the request was never processed (safe to send again)
 ├── LinkRequiredError         -32042: the user must open a link first (URL elicitation required)
 └── RemoteError               a JSON-RPC error answer (code, message), or an invalid result
"""

from __future__ import annotations

from typing import Any

from mcp import MCPError, UrlElicitationRequiredError
from mcp.types import (
    CONNECTION_CLOSED,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    REQUEST_TIMEOUT,
    URL_ELICITATION_REQUIRED,
    ErrorData,
)
from pydantic import ValidationError


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


class SignInRequiredError(ServerUnavailableError):
    """OAuth: no usable token (none yet, or the refresh was refused) and a person must sign in. The
    request that needed it was not sent, so it may be sent again once someone has signed in."""


class CallTimeoutError(McpError):
    pass


class ConnectionLostError(McpError):
    pass


class SessionExpiredError(McpError):
    """The server ended our Streamable HTTP session; the request that saw it did not run."""


class LinkRequiredError(McpError):
    """The server needs the user to finish something in their browser before the call can run."""

    def __init__(self, server: str, message: str, links: list[Any]) -> None:
        super().__init__(server, message)
        self.links = links  # ElicitRequestURLParams


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


# The SDK's streamable-HTTP transport turns a bare 404 on a request with a session id into -32600.
_SESSION_GONE = "session terminated"


def from_sdk_error(server: str, exc: MCPError, what: str, *, session_expired: bool = False) -> McpError:
    """Map an ``MCPError`` raised by the SDK while doing ``what`` to the most specific local error.

    ``session_expired`` comes from the transport, which saw the HTTP 404 itself: servers built on the
    TypeScript SDK put a JSON-RPC body on that 404 (code -32001 "Session not found", the same code as
    the SDK's own timeout), and the Python SDK surfaces that body instead of its "Session terminated".
    """
    if session_expired or (exc.code == INVALID_REQUEST and _SESSION_GONE in (exc.message or "").lower()):
        return SessionExpiredError(server, f"the server ended the session; {what} was not processed")
    if exc.code == URL_ELICITATION_REQUIRED:
        try:
            error = ErrorData(code=exc.code, message=exc.message, data=exc.data)
            links = UrlElicitationRequiredError.from_error(error).elicitations
        except (ValueError, ValidationError):
            links = []
        return LinkRequiredError(server, f"{what}: the user must first open a link ({exc.message})", links)
    if exc.code == REQUEST_TIMEOUT:
        return CallTimeoutError(server, f"{what} timed out; the server was asked to cancel it")
    if exc.code == CONNECTION_CLOSED:
        return ConnectionLostError(server, f"connection closed during {what} (server exited or crashed)")
    return RemoteError(server, f"{what} failed: {exc.message} (JSON-RPC {exc.code})", exc.code)


def first_leaf(exc: BaseException) -> BaseException:
    """The first non-group exception inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
