"""The frame protocol, in one place: what a frame looks like, which kinds exist, which group gets it,
and how it is published.

A frame is ``{"run": id, "seq": n, "type": kind, "data": {...}}``. Every frame of a run is first a
``RunEvent`` row with the same ``seq`` (``chatapp/event_log.py`` numbers and stores them), then a
message to the conversation's channel group; a client that missed one back-fills from the rows.
Publishing is best effort by design: when Redis is down the frame is still stored.

The kinds are a ``StrEnum`` here and nowhere else: ``static/js/chat.js`` reads them from the page
(``kinds_for_js``, rendered with ``json_script``), so the browser and the server cannot drift apart.
Like Zulip's ``send_event_on_commit``, ``publish_on_commit`` is the one way a database change
announces itself: a rolled-back change publishes nothing. Each process picks how a publish leaves
it (``use_publisher``): the web process sends from the committing thread, the worker hands the
frame to its runtime's event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from enum import StrEnum
from typing import Any, TypedDict

from django.db import transaction

log = logging.getLogger(__name__)

# The Channels message type; the consumer's ``run_frame`` method receives it.
MESSAGE_TYPE = "run.frame"


class Kind(StrEnum):
    # Engine events (durable ones rebuild the run's state; see event_codec.py).
    ROUND_STARTED = "round_started"
    ROUND_RETRIED = "round_retried"  # the request failed before any output and is sent again
    ROUND_FINISHED = "round_finished"
    TOOL_CALL = "tool_call"
    TOOL_PROGRESS = "tool_progress"
    APPROVAL_REQUESTED = "approval_requested"
    CONTEXT_COMPRESSED = "context_compressed"
    RUN_FINISHED = "run_finished"
    RUN_FAILED = "run_failed"
    # Never sent alone: the recorder coalesces them into one DELTA frame.
    TEXT = "text"
    REASONING = "reasoning"
    TOOL_CALL_DELTA = "tool_call_delta"
    # Written by the host, not the engine.
    DELTA = "delta"  # coalesced text, reasoning and tool-argument fragments
    STATUS = "status"  # the run moved (chatapp/services/run_lifecycle.py)
    APPROVAL_DECIDED = "approval_decided"
    LINK = "link"  # a tool's server asked the user to open a link (worker/links.py)
    # A number whose frame was never stored (its worker died or lost the run before the write
    # committed): written in its place when the run is next taken or moved (event_log.Sequence), so a
    # client applying frames in sequence never waits for it. Clients skip it.
    GAP = "gap"
    # Sent by the consumer only, never stored: the replay of stored frames is complete.
    REPLAY_DONE = "replay_done"


class Frame(TypedDict):
    run: int
    seq: int
    type: str
    data: dict[str, Any]


def frame(run_id: int, seq: int, kind: str, data: dict[str, Any]) -> Frame:
    return {"run": run_id, "seq": seq, "type": str(kind), "data": data}


def group(conversation_id: int) -> str:
    """The channel group of a conversation: every open tab of it, and ``manage.py chat``."""
    return f"conversation.{conversation_id}"


def kinds_for_js() -> dict[str, str]:
    """``{"DELTA": "delta", ...}``: the kinds ``chat.js`` compares frames with (see views/chat.py)."""
    return {k.name: k.value for k in Kind}


async def publish(conversation_id: int, frames: list[Frame], layer: Any = None) -> bool:
    """Send frames to the conversation's group in order, each within the frame size limit. False
    when the channel layer failed: the frames are in the event log already and clients back-fill."""
    from channels.layers import get_channel_layer

    from chatapp import frame_bus
    from chatapp.frame_limits import bounded_frame, encoded_frame

    layer = layer or get_channel_layer()
    name = group(conversation_id)
    try:
        for item in frames:
            if frame_bus.supports(layer):
                # Every live follower listens on the bus (sockets, SSE readers, manage.py chat).
                await frame_bus.publish(layer, name, encoded_frame(dict(item)))
            else:
                await layer.group_send(name, {"type": MESSAGE_TYPE, "frame": bounded_frame(dict(item))})
    except Exception:  # noqa: BLE001 - Redis down: stored already; clients back-fill
        log.warning("publishing a frame failed", exc_info=True)
        return False
    return True


def _publish_from_this_thread(conversation_id: int, frames: list[Frame]) -> None:
    from asgiref.sync import async_to_sync

    async_to_sync(publish)(conversation_id, frames)


_publisher: Callable[[int, list[Frame]], None] = _publish_from_this_thread


def use_publisher(publisher: Callable[[int, list[Frame]], None] | None) -> None:
    """Choose how this process sends frames published on commit (None: from the committing thread)."""
    global _publisher
    _publisher = publisher or _publish_from_this_thread


def publish_on_commit(conversation_id: int, frames: list[Frame]) -> None:
    """Publish once the surrounding transaction commits (at once outside one); never on rollback."""
    if frames:
        transaction.on_commit(lambda: _publisher(conversation_id, list(frames)))
