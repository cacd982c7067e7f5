"""A websocket whose client does not read is dropped instead of growing daphne's memory.

daphne writes every frame into the socket's Twisted transport, which buffers without limit: a tab
that stopped reading (a frozen browser, a hostile client) made daphne hold every frame of every
run of its conversation. Before each send the bytes still waiting in that buffer are looked at;
past ``WS_SEND_BUFFER_BYTES`` the connection is aborted (the buffer is freed at once). The page
reconnects and back-fills from the stored frames (docs/durable-runs.md), so nothing is lost; the
other sockets never wait for this one.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def pending_bytes(transport: object) -> int:
    """Bytes a Twisted TCP transport has accepted but not yet written to the socket."""
    data = getattr(transport, "dataBuffer", b"")
    return len(data) - getattr(transport, "offset", 0) + getattr(transport, "_tempDataLen", 0)


def install(limit: int) -> None:
    from daphne.ws_protocol import WebSocketProtocol

    if getattr(WebSocketProtocol, "_clearloop_limit", None) is not None:
        WebSocketProtocol._clearloop_limit = limit
        return
    original = WebSocketProtocol.serverSend
    WebSocketProtocol._clearloop_limit = limit

    def server_send(self, content, binary=False):  # noqa: ANN001 - daphne's signature
        transport = getattr(self, "transport", None)
        if transport is not None and pending_bytes(transport) > WebSocketProtocol._clearloop_limit:
            log.warning(
                "websocket %s: client is not reading (%s bytes waiting); dropped, it back-fills on reconnect",
                getattr(self, "client_addr", None),
                pending_bytes(transport),
            )
            transport.abortConnection()
            return
        original(self, content, binary)

    WebSocketProtocol.serverSend = server_send
