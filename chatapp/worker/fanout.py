"""Publishing many frames to many conversations in one Redis round trip.

Everything that follows a conversation live listens on its frame bus channel
(``chatapp/frame_bus.py``): the browser's websockets, the REST API's SSE stream and the
OpenAI-compatible stream (``services/run_events.py``), ``manage.py chat``. So a tick of a worker
relaying a hundred streams is one pipeline of ``PUBLISH`` per Redis server, whatever the number of
conversations. (Until session 14 the SSE readers joined the channel-layer group instead, and every
tick also asked each conversation's group for its members, two more commands per conversation:
docs/performance.md.) A channel layer without the bus gets one ``group_send`` per frame.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from chatapp import frame_bus


async def publish_many(layer: Any, messages: list[tuple[str, dict[str, Any]]]) -> None:
    """Send each ``(group, message)`` to its group's listeners, in order."""
    if not messages:
        return
    if not frame_bus.supports(layer):
        for group, message in messages:
            await layer.group_send(group, message)
        return
    by_server: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for group, message in messages:
        by_server[frame_bus.shard(layer, group)].append((frame_bus.channel(group), message["text"]))
    for index, published in by_server.items():
        pipe = layer.connection(index).pipeline(transaction=False)
        for name, text in published:
            pipe.publish(name, text)
        await pipe.execute()
