"""The conversation websocket: live frames of every run, with back-fill on reconnect (R-RUN-5).

The client sends ``{"resume": {"<run id>": <last seq>, ...}}`` (or nothing) once connected. The
consumer joins the group first, then replays stored frames newer than what the client has; frames
that arrive live meanwhile may overlap the replay, and the client drops any (run, seq) it has seen.
Only the conversation's owner, auditors and holders of view_conversation may subscribe (access.py).
"""

from __future__ import annotations

import json
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from chatapp.access import can_view_conversation
from chatapp.models import Conversation, RunEvent
from chatapp.redaction import shown

REPLAY_LIMIT = 5000


class ConversationConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        self.conversation_id = int(self.scope["url_route"]["kwargs"]["conversation_id"])
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not await self._may_view(user):
            await self.close(code=4403)
            return
        self.group = f"conversation.{self.conversation_id}"
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    @database_sync_to_async
    def _may_view(self, user: Any) -> bool:
        conversation = Conversation.objects.filter(pk=self.conversation_id).first()
        return conversation is not None and can_view_conversation(user, conversation)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if not isinstance(content, dict) or "resume" not in content:
            return
        resume = content.get("resume") or {}
        if not isinstance(resume, dict):
            return
        try:
            positions = {int(k): int(v) for k, v in resume.items()}
        except (TypeError, ValueError):
            return
        since_run = content.get("since_run")
        frames = await self._stored_frames(positions, int(since_run) if since_run else None)
        for frame in frames:
            await self.send_json(frame)
        await self.send_json({"type": "replay_done", "count": len(frames)})

    @database_sync_to_async
    def _stored_frames(self, positions: dict[int, int], since_run: int | None) -> list[dict[str, Any]]:
        events = RunEvent.objects.filter(run__conversation_id=self.conversation_id)
        floor = since_run if since_run is not None else (min(positions) if positions else None)
        if floor is not None:
            events = events.filter(run_id__gte=floor)
        else:
            events = events.filter(run__status__in=("queued", "running", "awaiting_approval"))
        frames = []
        for run_id, seq, kind, payload in events.order_by("run_id", "seq").values_list(
            "run_id", "seq", "type", "payload"
        )[:REPLAY_LIMIT]:
            if seq > positions.get(run_id, 0):
                frames.append({"run": run_id, "seq": seq, "type": kind, "data": shown(payload)})
        return frames

    async def run_frame(self, message: dict[str, Any]) -> None:
        await self.send_json(message["frame"])

    @classmethod
    async def encode_json(cls, content: Any) -> str:
        return json.dumps(content, ensure_ascii=False)
