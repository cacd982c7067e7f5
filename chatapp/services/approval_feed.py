"""The approvers' live feed: when the approval queue changes, every approver's open page hears it.

The queue (``approvals.pending()``) changes in exactly three ways, and each is already a move made
under the run's row lock by one of two functions:

* requested: the run moves into ``awaiting_approval`` (``run_lifecycle.move_locked``, from the worker);
* decided: an approver or the user decides a call (``approvals.decide``); deciding the last one moves
  the run back to ``queued`` (``move_locked`` again, which then is the one that announces it);
* voided: the run leaves the wait any other way, e.g. Stop or a sweep (``move_locked`` to a terminal
  state takes its undecided calls out of the queue).

Both call ``changed_on_commit`` here, the one place that publishes. On commit (never on rollback)
it counts the queue once and sends the same body the badge's ``/approvals/count/`` answers to the
``approvers`` channel group; ``ApprovalsConsumer`` (chatapp/consumers.py) forwards it to each
approver's socket and ``static/js/approvals.js`` updates the badge, the open list and notifies.
Best effort like every frame: with Redis away nothing is sent, and the pages' slow poll catches up.
"""

from __future__ import annotations

import asyncio
import logging
from enum import StrEnum
from typing import Any

from django.db import transaction

log = logging.getLogger(__name__)

GROUP = "approvers"
# The Channels message type; the consumer's ``approvals_changed`` method receives it.
MESSAGE_TYPE = "approvals.changed"


class Change(StrEnum):
    REQUESTED = "requested"
    DECIDED = "decided"
    VOIDED = "voided"


def changed_on_commit(change: Change) -> None:
    """Announce a change of the approval queue once the surrounding transaction commits."""
    transaction.on_commit(lambda: _send(change))


def message(change: Change) -> dict[str, Any]:
    from chatapp.services.approvals import summary

    return {"type": MESSAGE_TYPE, "change": str(change), "summary": summary()}


def _send(change: Change) -> None:
    from channels.layers import get_channel_layer

    try:
        body = message(change)  # counted after the commit: what every approver should now see
        layer = get_channel_layer()
        if layer is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None:
            # Committed on a thread that runs an event loop: async_to_sync would refuse; send from it.
            loop.create_task(_send_async(layer, body))
            return
        from asgiref.sync import async_to_sync

        async_to_sync(layer.group_send)(GROUP, body)
    except Exception:  # noqa: BLE001 - best effort: the approvers' pages poll slowly as a fallback
        log.warning("announcing an approval queue change failed", exc_info=True)


async def _send_async(layer: Any, body: dict[str, Any]) -> None:
    try:
        await layer.group_send(GROUP, body)
    except Exception:  # noqa: BLE001 - as above
        log.warning("announcing an approval queue change failed", exc_info=True)
