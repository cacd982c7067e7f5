"""An HTTP response body is produced only as fast as the client reads it.

daphne writes each ``http.response.body`` message into the connection's Twisted transport at once and
never makes the application wait: a client that reads slowly (a large zip over a slow link) let the
whole body pile up in daphne's memory, however carefully the view streamed it (``chatapp/streaming``).
Twisted's HTTP channel knows when the socket's buffer is full (``_waitingForTransport``, set by the
transport's ``pauseProducing``); after sending a piece while it is, the application waits until the
channel asks its request producer to resume (the buffer drained) or to stop (the connection was lost).

Only daphne's HTTP/1.1 channel is paced; under any other server ``paced`` returns ``send`` itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

Send = Callable[[Mapping[str, Any]], Awaitable[None]]


class _Resume:
    """A Twisted push producer that only says when the channel wants more again (or no more)."""

    def __init__(self, future: asyncio.Future[None]) -> None:
        self.future = future

    def _wake(self) -> None:
        if not self.future.done():
            self.future.set_result(None)

    def pauseProducing(self) -> None:  # noqa: N802 - Twisted's interface
        return None

    def resumeProducing(self) -> None:  # noqa: N802
        self._wake()

    def stopProducing(self) -> None:  # noqa: N802
        self._wake()


def _channel(send: Send) -> Any:
    protocol = (getattr(send, "args", None) or (None,))[0]  # daphne: partial(server.handle_reply, request)
    channel = getattr(protocol, "channel", None)
    if not (hasattr(channel, "_waitingForTransport") and hasattr(channel, "registerProducer")):
        return None
    return channel


async def _drained(channel: Any) -> None:
    if not getattr(channel, "_waitingForTransport", False) or getattr(channel, "_requestProducer", None):
        return
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    channel.registerProducer(_Resume(future), True)
    try:
        await future
    finally:
        channel.unregisterProducer()


def paced(send: Send) -> Send:
    if _channel(send) is None:
        return send

    async def paced_send(message: Mapping[str, Any]) -> None:
        await send(message)
        if message.get("type") == "http.response.body" and message.get("more_body"):
            channel = _channel(send)
            if channel is not None:
                await _drained(channel)

    return paced_send
