"""Publishing a run's stored frames to its conversation's group (the page's live view).

Only frames already in the event log are published, so a publish that fails (Redis away) loses
nothing: the client back-fills from the database when it reconnects. Every publish goes through
``fanout.publish_many``, the path the cross-run batch of live frames takes too.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from chatapp import frames
from chatapp.frame_limits import encoded_frame
from chatapp.worker.fanout import publish_many

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LiveFrame:
    """One frame of a run on its way to the conversation's group."""

    run_id: int
    seq: int
    kind: str
    payload: dict[str, Any]
    group: str

    def message(self) -> dict[str, Any]:
        # Encoded once here: daphne forwards the text to every socket without decoding it.
        frame = {"run": self.run_id, "seq": self.seq, "type": self.kind, "data": self.payload}
        return {"type": "run.frame", "text": encoded_frame(frame)}


class RunPublisher:
    def __init__(self, run_id: int, group: str, slots: asyncio.Semaphore, layer: Any = None) -> None:
        self.run_id = run_id
        self.group = group
        self._slots = slots  # the worker's bound on concurrent publishes (runtime.publish_slots)
        self._layer = layer  # the process's channel layer unless given (tests pass their own)

    async def publish(self, seq: int, kind: str, payload: dict[str, Any]) -> None:
        await self.publish_all([(seq, kind, payload)])

    async def publish_all(self, stored: list[tuple[int, str, dict[str, Any]]]) -> None:
        """Stored frames ``(seq, kind, payload)``, in their order, in one round trip to Redis (a step's
        events and the status move they made: one pipeline, not one wait per frame)."""
        if not stored:
            return
        messages = [(self.group, LiveFrame(self.run_id, *frame, self.group).message()) for frame in stored]
        try:
            async with self._slots:
                await publish_many(self._channel_layer(), messages)
        except Exception:  # noqa: BLE001 - Redis down: the frames are in the event log; clients back-fill
            log.warning("publishing a frame failed", exc_info=True)

    async def publish_stored(self, stored: list[frames.Frame]) -> None:
        """Frames a store function returned (the status move an event made), in their order."""
        await self.publish_all([(item["seq"], item["type"], item["data"]) for item in stored])

    def _channel_layer(self) -> Any:
        if self._layer is None:
            from channels.layers import get_channel_layer

            self._layer = get_channel_layer()
        return self._layer
