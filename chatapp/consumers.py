"""The websockets: a conversation's live frames, and the approvers' feed (``ApprovalsConsumer``).

The conversation websocket: live frames of every run, with back-fill on reconnect (R-RUN-5).

The client sends ``{"resume": {"<run id>": <last seq>, ...}}`` (or nothing) once connected. The
consumer joins the conversation's frame bus first (``frame_bus.py``; the channel-layer group where
the layer is not Redis), then replays stored frames newer than what the client has; frames
that arrive live meanwhile may overlap the replay, and the client drops any (run, seq) it has seen.
Live frames wait behind that first replay: sent before it, a frame could reach the client ahead of
the stored ones just before it, and a client that dropped right then would resume past those. A
client that sends nothing gets its live frames after ``FIRST_MESSAGE_WAIT`` seconds.
Only the conversation's owner, auditors and holders of view_conversation may subscribe (access.py).
That is checked again before every replay and, while frames flow, at most every
``ACCESS_RECHECK_SECONDS``: a socket whose user signed out, was deactivated, changed their password or
lost the grant is closed with 4403 (an open socket is not a standing permission).

Whatever a client sends, the socket stays up: binary frames, text that is not JSON and resume
requests of the wrong shape are ignored with a warning in the log (review L5). Every frame sent is
bounded (``chatapp/frame_limits.py``), and one user may hold at most ``MAX_WEBSOCKETS_PER_USER``
sockets per web process (review L8).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from importlib import import_module
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.utils.crypto import constant_time_compare

from chatapp import event_log, frame_bus, frames, json_text
from chatapp.access import can_view_conversation
from chatapp.frame_limits import encoded_frame
from chatapp.models import Conversation
from chatapp.services import approval_feed
from chatapp.services.approvals import may_approve
from chatapp.services.approvals import summary as approvals_summary

log = logging.getLogger(__name__)
REPLAY_LIMIT = 5000
MAX_RESUMED_RUNS = 200  # the page resumes the runs it follows (a few); each is a condition of the query
MAX_ID = 2**53  # ids and sequence numbers beyond what a client (JavaScript) can even hold
TOO_MANY_SOCKETS = 4429
SUBSCRIPTION_LOST = 4503  # the live subscription failed: the page reconnects and back-fills
FORBIDDEN = 4403
ACCESS_RECHECK_SECONDS = 30.0
# How long a new socket holds live frames for the client's first message (the browser sends its
# resume request at once): a client that never sends one gets them after this.
FIRST_MESSAGE_WAIT = 1.0


class BadRequest(ValueError):
    pass


def parse_resume(text: str) -> tuple[dict[int, int], int | None] | None:
    """``(positions, since_run)`` from a client's message; None when it asks for nothing."""
    try:
        content = json.loads(text)
    except ValueError as exc:
        raise BadRequest("not JSON") from exc
    if not isinstance(content, dict) or "resume" not in content:
        return None
    resume = content.get("resume") or {}
    if not isinstance(resume, dict):
        raise BadRequest("resume is not an object")
    if len(resume) > MAX_RESUMED_RUNS:
        raise BadRequest(f"resume names more than {MAX_RESUMED_RUNS} runs")
    positions = {_number(k, "run id"): _number(v, "sequence number") for k, v in resume.items()}
    since_run = content.get("since_run")
    return positions, (_number(since_run, "since_run") if since_run is not None else None)


def _number(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise BadRequest(f"{what} is not a number")
    try:
        number = int(value)
    except ValueError as exc:
        raise BadRequest(f"{what} is not a number") from exc
    if not 0 <= number < MAX_ID:
        raise BadRequest(f"{what} is out of range")
    return number


class ConversationConsumer(AsyncWebsocketConsumer):
    open_sockets: Counter[int] = Counter()  # user id -> sockets open in this process

    async def connect(self) -> None:
        # Live frames stay held until the client's first message is answered (``receive``): one
        # replay or release at a time, and never a live frame between a replay's frames.
        self._held: list[str] | None = []
        self._replaying = asyncio.Lock()
        self._spoke = False
        self.conversation_id = int(self.scope["url_route"]["kwargs"]["conversation_id"])
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not await self._may_view(user):
            await self.close(code=FORBIDDEN)
            return
        self.checked_at = time.monotonic()
        if self.open_sockets[user.pk] >= settings.MAX_WEBSOCKETS_PER_USER:
            log.warning("user %s: websocket refused, %s already open", user.pk, self.open_sockets[user.pk])
            await self.accept()
            await self.close(code=TOO_MANY_SOCKETS)
            return
        self.user_id = user.pk
        self.open_sockets[user.pk] += 1
        group = frames.group(self.conversation_id)
        if frame_bus.supports(self.channel_layer):
            # Live frames come from the conversation's bus channel (frame_bus.py); before accept, so
            # the replay the client asks for next cannot miss a frame published in between.
            try:
                await frame_bus.bus().join(self.channel_layer, group, id(self), self._forward, self._lost)
            except frame_bus.BusUnavailable:
                log.warning("conversation %s: no live frames (Redis away); refused", self.conversation_id)
                await self.close(code=SUBSCRIPTION_LOST)
                return
            self.bus_group = group
        else:
            await self.channel_layer.group_add(group, self.channel_name)
            self.group = group
        await self.accept()
        self._waiting = asyncio.create_task(self._release_unasked())

    async def _release_unasked(self) -> None:
        """A client that sends nothing gets the live frames without a replay."""
        await asyncio.sleep(FIRST_MESSAGE_WAIT)
        async with self._replaying:
            if not self._spoke:
                await self._send_held()

    async def _send_held(self) -> None:
        if getattr(self, "refused", False):  # closed for a lost right to see: nothing more goes out
            self._held = None
            return
        while self._held:  # in order: frames arriving meanwhile queue behind these
            await self.send(text_data=self._held.pop(0))
        self._held = None

    async def _forward(self, text: str) -> None:
        if self._held is not None:
            self._held.append(text)
            return
        if not await self._allowed_still(every=ACCESS_RECHECK_SECONDS):
            return
        await self.send(text_data=text)

    async def _allowed_still(self, every: float = 0.0) -> bool:
        """Whether the socket's user may still see the conversation (asked again after ``every``
        seconds); if not, the socket is closed with 4403 and nothing more is sent on it."""
        if getattr(self, "refused", False):
            return False
        if time.monotonic() - self.checked_at < every:
            return True
        self.checked_at = time.monotonic()
        if await self._may_view_now():
            return True
        self.refused = True
        who = (self.conversation_id, self.user_id)
        log.warning("conversation %s: user %s may no longer see it; socket closed", *who)
        await self.close(code=FORBIDDEN)
        return False

    @database_sync_to_async
    def _may_view_now(self) -> bool:
        # Fresh rows, not the scope's: the user object caches its permissions, the session its data.
        user = get_user_model().objects.filter(pk=self.user_id).first()
        if user is None or not self._session_holds(user):
            return False
        conversation = Conversation.objects.filter(pk=self.conversation_id).first()
        return conversation is not None and can_view_conversation(user, conversation)

    def _session_holds(self, user: Any) -> bool:
        """The socket's session still signs this user in (not signed out, expired, or from before a
        password change). A scope with no session (a test's) has nothing to check."""
        session = self.scope.get("session")
        if session is None or not session.session_key:
            return True
        stored = import_module(settings.SESSION_ENGINE).SessionStore(session.session_key)
        if str(stored.get(SESSION_KEY)) != str(user.pk):
            return False
        return constant_time_compare(stored.get(HASH_SESSION_KEY, ""), user.get_session_auth_hash())

    async def _lost(self) -> None:
        # The live subscription failed or was re-made: frames may have been lost in between. The
        # page reconnects and back-fills from the stored frames.
        await self.close(code=SUBSCRIPTION_LOST)

    @database_sync_to_async
    def _may_view(self, user: Any) -> bool:
        conversation = Conversation.objects.filter(pk=self.conversation_id).first()
        return conversation is not None and can_view_conversation(user, conversation)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "_waiting"):
            self._waiting.cancel()
        if hasattr(self, "user_id"):
            self.open_sockets[self.user_id] -= 1
            if self.open_sockets[self.user_id] <= 0:
                del self.open_sockets[self.user_id]
        if hasattr(self, "bus_group"):
            await frame_bus.bus().leave(self.channel_layer, self.bus_group, id(self))
        if hasattr(self, "group"):
            try:
                await self.channel_layer.group_discard(self.group, self.channel_name)
            except Exception:  # noqa: BLE001 - Redis away: the membership expires with the group
                log.warning("leaving %s failed", self.group, exc_info=True)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is None:
            log.warning("conversation %s: binary websocket message ignored", self.conversation_id)
            return
        self._spoke = True
        try:
            request = parse_resume(text_data)
        except BadRequest as bad:
            log.warning("conversation %s: websocket message ignored (%s)", self.conversation_id, bad)
            request = None
        async with self._replaying:
            if request is None:  # nothing asked: the live frames held for the first message go now
                await self._send_held()
                return
            # Live frames that arrive while the stored ones are read wait behind them: sent first, a
            # run's end could reach the page before the frames just stored ahead of it (a client that
            # resumes from the highest number it holds would then skip those for good).
            self._held = self._held if self._held is not None else []
            try:
                if await self._allowed_still():
                    await self._replay(*request)
            finally:
                await self._send_held()  # in order; the page applies each (run, seq) once

    async def _replay(self, positions: dict[int, int], since_run: int | None) -> None:
        stored = await self._stored_frames(positions, since_run)
        for frame in stored:
            await self.send(text_data=encoded_frame(dict(frame)))
        await self.send_json({"type": frames.Kind.REPLAY_DONE, "count": len(stored)})

    @database_sync_to_async
    def _stored_frames(self, positions: dict[int, int], since_run: int | None) -> list[frames.Frame]:
        return event_log.stored_frames(self.conversation_id, positions, since_run, REPLAY_LIMIT)

    async def dispatch(self, message: dict[str, Any]) -> None:
        # channels closes stale DB connections before every handler, a thread hop per message; a
        # live frame touches no database, and at 100 tokens/s that hop was 16 % of daphne's CPU.
        if message.get("type") == "run.frame":
            await self.run_frame(message)
            return
        await super().dispatch(message)

    async def run_frame(self, message: dict[str, Any]) -> None:
        # The worker encoded the frame once for every socket of the conversation.
        encoded = message.get("text")
        await self._forward(encoded if encoded is not None else json_text.dumps(message["frame"]))

    async def send_json(self, content: Any) -> None:
        await self.send(text_data=json_text.dumps(content))


class ApprovalsConsumer(AsyncWebsocketConsumer):
    """The approvers' live feed (/ws/approvals/): the badge's count and the newest waiting call,
    pushed whenever the approval queue changes (``services/approval_feed.py``). Only approvers
    (``approvals.may_approve``) may open it; everyone else, anonymous included, is refused with 4403.
    On connect it sends the queue as it is now, so a page that reconnects is never behind."""

    open_sockets: Counter[int] = Counter()  # user id -> feeds open in this process

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not await self._may_approve(user):
            await self.close(code=4403)
            return
        if self.open_sockets[user.pk] >= settings.MAX_WEBSOCKETS_PER_USER:
            open_now = self.open_sockets[user.pk]
            log.warning("user %s: approvals feed refused, %s already open", user.pk, open_now)
            await self.accept()
            await self.close(code=TOO_MANY_SOCKETS)
            return
        self.user_id = user.pk
        self.open_sockets[user.pk] += 1
        await self.channel_layer.group_add(approval_feed.GROUP, self.channel_name)
        self.joined = True
        await self.accept()
        await self.send_json(await self._current())

    @database_sync_to_async
    def _may_approve(self, user: Any) -> bool:
        return may_approve(user)

    @database_sync_to_async
    def _current(self) -> dict[str, Any]:
        return {"type": "approvals", "change": "current", **approvals_summary()}

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "user_id"):
            self.open_sockets[self.user_id] -= 1
            if self.open_sockets[self.user_id] <= 0:
                del self.open_sockets[self.user_id]
        if getattr(self, "joined", False):
            try:
                await self.channel_layer.group_discard(approval_feed.GROUP, self.channel_name)
            except Exception:  # noqa: BLE001 - Redis away: the membership expires with the group
                log.warning("leaving %s failed", approval_feed.GROUP, exc_info=True)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        pass  # the feed only speaks; whatever a client sends is ignored

    async def approvals_changed(self, message: dict[str, Any]) -> None:
        # The right to approve is looked at again with each push (a change of the queue, rare): someone
        # whose permission, staff status or account was taken away since connecting learns nothing more
        # of the waiting calls, and the socket is closed as a new one would be refused.
        if not await self._still_approver():
            await self.close(code=4403)
            return
        await self.send_json({"type": "approvals", "change": message.get("change"), **message["summary"]})

    @database_sync_to_async
    def _still_approver(self) -> bool:
        user = get_user_model().objects.filter(pk=self.user_id).first()  # fresh: no cached permissions
        return user is not None and may_approve(user)

    async def send_json(self, content: Any) -> None:
        await self.send(text_data=json_text.dumps(content))
