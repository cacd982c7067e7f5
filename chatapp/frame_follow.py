"""Following a conversation's live frames from outside a websocket: the REST API's SSE stream and the
OpenAI-compatible stream (``services/run_events.py``, a wake-up only) and ``manage.py chat`` (it
counts the frames).

A follower listens where the conversation's sockets listen (``consumers.py``): the conversation's
frame-bus channel (``frame_bus.py``), or, with a channel layer that has no bus (the in-memory layer:
no Redis), the channel layer's group, on a channel of its own. What to do when Redis is away is the
caller's choice, so every error of the channel layer or the bus reaches the caller, except silence:
a wait that times out answers "nothing".
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from typing import Any

from channels.layers import get_channel_layer

from chatapp import frame_bus, frames


class Follower:
    """One conversation's live frames; ``join`` first, ``close`` at the end. ``wake`` waits for
    any frame, ``next`` takes them one by one (``keep_frames``: a follower that only wakes keeps
    none, however long its reader is busy between two waits)."""

    def __init__(self, conversation_id: int, *, keep_frames: bool = False) -> None:
        self.layer = get_channel_layer()
        self.group = frames.group(conversation_id)
        self.on_bus = False
        self.channel: str | None = None  # on the channel layer's group (no bus)
        # Frames from the bus not taken yet, decoded as they arrive (one that is not JSON is dropped
        # there, with the bus's warning).
        self._frames: deque[dict[str, Any]] | None = deque() if keep_frames else None
        self._news = asyncio.Event()  # a frame from the bus, or the news that the subscription broke

    async def join(self) -> None:
        """Returns once the frames are delivered here: a frame published after this is not missed.
        Raises when Redis is away (``frame_bus.BusUnavailable``, or the layer's own error); the
        follower then follows nothing. Without a channel layer at all it follows nothing either."""
        try:
            if frame_bus.supports(self.layer):
                await frame_bus.bus().join(self.layer, self.group, id(self), self._received, self._lost)
                self.on_bus = True
            elif self.layer is not None:
                self.channel = await self.layer.new_channel()
                await self.layer.group_add(self.group, self.channel)
        except Exception:
            self.on_bus, self.channel = False, None
            raise

    async def _received(self, text: str) -> None:
        if self._frames is not None:
            self._frames.append(json.loads(text))
        self._news.set()

    async def _lost(self) -> None:
        # The subscription broke: frames published meanwhile are gone and no more come (the bus
        # forgets the listener). A waiting ``wake`` returns, so its caller reads the stored events now.
        self.on_bus = False
        self._news.set()

    async def wake(self, timeout: float) -> bool:
        """True when a frame arrived (on the bus: any number of them since the last call, or the
        subscription broke), False after ``timeout`` seconds of silence. The frames themselves are
        dropped: a caller that only wakes reads what it needs from the event log."""
        if self.channel is not None:
            try:
                await asyncio.wait_for(self.layer.receive(self.channel), timeout)
            except TimeoutError:
                return False
            return True
        try:
            await asyncio.wait_for(self._news.wait(), timeout)
        except TimeoutError:
            return False
        self._news.clear()
        if self._frames is not None:
            self._frames.clear()
        return True

    async def next(self, timeout: float) -> dict[str, Any]:
        """The next frame, or {} after ``timeout`` seconds without one (a broken subscription only
        means that none comes)."""
        assert self._frames is not None, "a follower made without keep_frames has no frames to take"
        if self.channel is not None:
            try:
                message = await asyncio.wait_for(self.layer.receive(self.channel), timeout)
            except TimeoutError:
                return {}
            # frames.publish sends the frame itself; the worker (fanout.publish_many) its text.
            return message.get("frame") or json.loads(message.get("text") or "{}")
        try:
            async with asyncio.timeout(timeout):
                while not self._frames:
                    self._news.clear()
                    await self._news.wait()
        except TimeoutError:
            return {}
        return self._frames.popleft()

    async def close(self) -> None:
        """Stop following. Raises when Redis is away (the group's membership expires on its own)."""
        if self.on_bus:
            await frame_bus.bus().leave(self.layer, self.group, id(self))
        elif self.channel is not None:
            await self.layer.group_discard(self.group, self.channel)
