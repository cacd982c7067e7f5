"""Where a conversation's workspace lives on disk: one home for the worker (file tools) and the views."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings


def workspace_path(owner_id: int, conversation_id: int) -> Path:
    return Path(settings.WORKSPACE_ROOT) / f"user-{owner_id}" / f"conversation-{conversation_id}"
