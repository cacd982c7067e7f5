"""Live frames to the websockets: one Redis pub/sub channel per conversation, one subscription per
daphne process.

Why not the channel layer's groups: with channels_redis's core layer every frame was a sorted-set
message per socket (a Lua script per member on the way in) and, in daphne, a BZPOPMIN, a backup
ZADD and a clean-up script per message per socket; that receive path was the largest item in
daphne's profile (docs/performance.md, 2026-12-01). Here a frame is one ``PUBLISH`` (in the same
pipeline as the rest of the worker's tick) and daphne reads it once from one connection, whatever
the number of sockets on the conversation.

What pub/sub does not give, and why it is enough: a message published while a subscriber is
disconnected is gone (Redis keeps nothing). Every frame is stored before it is published and the
page back-fills a missing ``seq`` from the event log, so a lost live frame costs a replay, never
text. What must not happen is a socket that silently stops receiving: when the subscription's
connection fails or is re-established (redis-py reconnects and re-subscribes on its own), every
socket that relied on it is closed, and the page reconnects and back-fills
(``tests/durable/test_reconnect.py``). A quiet connection is pinged every ``KEEPALIVE`` seconds.

channels_redis's own ``RedisPubSubChannelLayer`` was not used: it polls ``get_message`` every
0.1 s (idle wake-ups), reconnects without telling the consumers, and still routes each message
through a per-consumer queue and dispatch.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from django.conf import settings

log = logging.getLogger(__name__)

KEEPALIVE = 20.0  # seconds without a message before the subscription pings Redis
SUBSCRIBE_TIMEOUT = 5.0

Receiver = Callable[[str], Awaitable[None]]  # forwards one encoded frame to its socket
Closer = Callable[[], Awaitable[None]]  # closes the socket: the page reconnects and back-fills


class BusUnavailable(ConnectionError):
    """The subscription could not be made (Redis away): the socket is refused and the page retries."""


_NEEDS = ("consistent_hash", "connection", "hosts")


def supports(layer: Any) -> bool:
    """True for channels_redis's core layer (Redis behind it); other layers keep the groups."""
    return layer is not None and all(hasattr(layer, name) for name in _NEEDS)


def channel(group: str) -> str:
    # Pub/sub channels are shared by every database number of a Redis server: the name carries the
    # database, so two deployments (or test sessions) on one Redis never see each other's frames.
    return f"clearloop.live.{settings.DATABASES['default']['NAME']}.{group}"


def shard(layer: Any, group: str) -> int:
    """The Redis server of a group's bus channel: the one its channel-layer group lives on."""
    return int(layer.consistent_hash(group))


async def publish(layer: Any, group: str, text: str) -> None:
    """One frame from a process that does not batch (the web process's status frames)."""
    await layer.connection(shard(layer, group)).publish(channel(group), text)


class _Subscription:
    """The process's pub/sub connection to one Redis server and the sockets that listen on it."""

    def __init__(self, host: dict[str, Any], on_lost: Callable[[_Subscription], None]) -> None:
        import redis.asyncio as aioredis
        from channels_redis.utils import create_pool

        self._client = aioredis.Redis(connection_pool=create_pool(host))
        self._pubsub = self._client.pubsub()
        self._on_lost = on_lost
        self.listeners: dict[str, dict[int, tuple[Receiver, Closer]]] = {}
        self._confirmed: dict[str, asyncio.Future[None]] = {}
        self._connects = 0
        # redis-py's PubSub opens its connection on the first command: two joins at once would each
        # open one (and one of them would never be read), so commands go one at a time.
        self._commands = asyncio.Lock()
        self._reader: asyncio.Task[None] | None = None
        self.lost = False

    def on_connect(self, connection: Any) -> None:
        # redis-py calls this on the first connect and on every silent reconnect (it re-subscribes
        # by itself): after a reconnect, frames published in between are gone and nobody knows.
        self._connects += 1
        if self._connects > 1:
            self._lose("reconnected")

    async def join(self, name: str, key: int, receiver: Receiver, closer: Closer) -> None:
        if self.lost:
            raise BusUnavailable("subscription lost")
        listeners = self.listeners.setdefault(name, {})
        listeners[key] = (receiver, closer)
        if len(listeners) > 1:  # another socket subscribed this channel (or is subscribing it)
            try:
                await asyncio.wait_for(asyncio.shield(self._confirmed[name]), SUBSCRIBE_TIMEOUT)
            except Exception as exc:
                listeners.pop(key, None)
                raise BusUnavailable(str(exc)) from exc
            return
        confirmed = asyncio.get_running_loop().create_future()
        self._confirmed[name] = confirmed
        try:
            async with self._commands:
                await self._pubsub.subscribe(name)
                if self._pubsub.connection is not None and self._connects == 0:
                    self._pubsub.connection.register_connect_callback(self.on_connect)
                    self._connects = 1
            if self._reader is None:
                self._reader = asyncio.create_task(self._read(), name="frame-bus reader")
            # Frames published before Redis took the subscription are not delivered: the socket
            # replays stored frames only after this, so nothing falls between replay and live.
            await asyncio.wait_for(asyncio.shield(confirmed), SUBSCRIBE_TIMEOUT)
        except Exception as exc:
            listeners.pop(key, None)
            self._lose(f"subscribe failed: {exc!r}")
            raise BusUnavailable(str(exc)) from exc

    async def leave(self, name: str, key: int) -> None:
        listeners = self.listeners.get(name)
        if listeners is None or listeners.pop(key, None) is None or listeners:
            return
        del self.listeners[name]
        self._confirmed.pop(name, None)
        if not self.lost:
            try:
                async with self._commands:
                    await self._pubsub.unsubscribe(name)
            except Exception:  # noqa: BLE001 - the connection is going: the reader notices
                log.warning("unsubscribing %s failed", name, exc_info=True)

    async def _read(self) -> None:
        pinged = False
        try:
            while not self.lost:
                message = await self._pubsub.get_message(timeout=KEEPALIVE)
                if message is None:
                    if pinged:  # no answer to the last ping within KEEPALIVE: a dead connection
                        self._lose("no answer to ping")
                        return
                    async with self._commands:
                        await self._pubsub.ping()
                    pinged = True
                    continue
                pinged = False
                await self._handle(message)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of the connection ends the subscription
            self._lose(f"read failed: {exc!r}")

    async def _handle(self, message: dict[str, Any]) -> None:
        kind, raw = message["type"], message.get("channel") or b""
        name = raw.decode() if isinstance(raw, bytes) else str(raw)
        if kind == "message":
            data = message["data"]
            text = data.decode() if isinstance(data, bytes) else str(data)
            for receiver, _ in list(self.listeners.get(name, {}).values()):
                try:
                    await receiver(text)
                except Exception:  # noqa: BLE001 - one socket's failure is not the others'
                    log.warning("forwarding a frame failed", exc_info=True)
        elif kind == "subscribe":
            confirmed = self._confirmed.get(name)
            if confirmed is not None and not confirmed.done():
                confirmed.set_result(None)

    def _lose(self, why: str) -> None:
        if self.lost:
            return
        self.lost = True
        log.warning("live frame subscription lost (%s); closing the sockets of %s", why, len(self.listeners))
        self._on_lost(self)
        for confirmed in self._confirmed.values():
            if not confirmed.done():
                confirmed.set_exception(BusUnavailable(why))
                confirmed.exception()  # retrieved: a waiter may have gone already
        asyncio.get_running_loop().create_task(self._close_all())

    async def _close_all(self) -> None:
        listeners = [closer for group in self.listeners.values() for _, closer in group.values()]
        self.listeners.clear()
        for closer in listeners:
            try:
                await closer()
            except Exception:  # noqa: BLE001 - the socket may be gone already
                log.debug("closing a socket failed", exc_info=True)
        if self._reader is not None and self._reader is not asyncio.current_task():
            self._reader.cancel()
        try:
            await self._pubsub.aclose()
            await self._client.aclose()
        except Exception:  # noqa: BLE001 - Redis away
            log.debug("closing the subscription failed", exc_info=True)


class FrameBus:
    """Every socket of this process that shows a conversation's live frames (``consumers.py``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._subscriptions: dict[int, _Subscription] = {}

    async def join(self, layer: Any, group: str, key: int, receiver: Receiver, closer: Closer) -> None:
        """Returns once Redis delivers the group's frames to ``receiver``; raises BusUnavailable."""
        index = shard(layer, group)
        subscription = self._subscriptions.get(index)
        if subscription is None:
            subscription = _Subscription(layer.hosts[index], self._forget)
            self._subscriptions[index] = subscription
        await subscription.join(channel(group), key, receiver, closer)

    async def leave(self, layer: Any, group: str, key: int) -> None:
        subscription = self._subscriptions.get(shard(layer, group))
        if subscription is not None:
            await subscription.leave(channel(group), key)

    def _forget(self, subscription: _Subscription) -> None:
        for index, known in list(self._subscriptions.items()):
            if known is subscription:
                del self._subscriptions[index]


_bus: FrameBus | None = None


def bus() -> FrameBus:
    """This process's bus (daphne runs one event loop; a test's loop gets its own, its connections
    end with it)."""
    global _bus
    loop = asyncio.get_running_loop()
    if _bus is None or _bus.loop is not loop:
        _bus = FrameBus(loop)
    return _bus
