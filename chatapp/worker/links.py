"""Links MCP servers ask the run's user to open (URL-mode elicitation): the worker's side.

The engine calls ``Sink.ask_link``; the recorder hands it here. The link is stored as a ``ToolLink``
row (what the chat page renders, and where the user's answer lands), announced with a ``link``
frame, and the call waits until the row is answered, the run is stopped, or ``timeout`` passes.
The row is read by one query per ``INTERVAL``, like the stop watcher (cancels.py).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from django.utils import timezone

from agent.toolbox import LinkAnswer, LinkRequest

INTERVAL = 0.25
ANSWERS: dict[str, LinkAnswer] = {"accepted": "accept", "declined": "decline"}


async def ask(recorder: Any, request: LinkRequest, timeout: float) -> LinkAnswer:
    link_id = await recorder.runtime.db(_create, recorder.run_id, request)
    recorder.link_ids.append(link_id)
    await recorder.publish_link(link_id, "pending" if request.wait else "shown", request)
    if not request.wait:
        return "cancel"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not await recorder.is_cancelled():
        state = await recorder.runtime.db(_state, link_id)
        if state in ANSWERS:
            await recorder.publish_link(link_id, state, request)
            return ANSWERS[state]
        await asyncio.sleep(INTERVAL)  # polling a row another process writes
    state = await recorder.runtime.db(_close, link_id)
    await recorder.publish_link(link_id, state, request)
    return ANSWERS.get(state, "cancel")


def _create(run_id: int, request: LinkRequest) -> int:
    from chatapp.models import ToolLink

    link = ToolLink.objects.create(
        run_id=run_id,
        call_id=request.call_id,
        tool=request.tool,
        server=request.server,
        message=request.message[:2000],
        url=request.url,
        elicitation_id=request.elicitation_id or "",
        state=ToolLink.State.PENDING if request.wait else ToolLink.State.SHOWN,
    )
    return link.pk


def _state(link_id: int) -> str:
    from chatapp.models import ToolLink

    return ToolLink.objects.values_list("state", flat=True).get(pk=link_id)


def _close(link_id: int) -> str:
    """No answer in time: cancelled, unless the user's answer landed at the last moment."""
    from chatapp.models import ToolLink

    ToolLink.objects.filter(pk=link_id, state=ToolLink.State.PENDING).update(
        state=ToolLink.State.CANCELLED, answered_at=timezone.now()
    )
    return _state(link_id)


def close_pending(run_id: int, link_ids: list[int] | None = None) -> int:
    """The run's links (or only ``link_ids``) still waiting for an answer get "no answer": nobody
    waits for them any more."""
    from chatapp.models import ToolLink

    pending = ToolLink.objects.filter(run_id=run_id, state=ToolLink.State.PENDING)
    if link_ids is not None:
        pending = pending.filter(pk__in=link_ids)
    return pending.update(state=ToolLink.State.CANCELLED, answered_at=timezone.now())
