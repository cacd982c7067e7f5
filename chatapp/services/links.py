"""The user's answer to a link an MCP server asked them to open (URL-mode elicitation).

Only the conversation's owner answers (the link was asked of them); an answer lands once, on a
pending link: a late or repeated click changes nothing. The worker waiting for it sees the row
change (chatapp/worker/links.py).
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from chatapp.audit import record
from chatapp.models import ToolLink

STATES = {"accept": ToolLink.State.ACCEPTED, "decline": ToolLink.State.DECLINED}


class LinkAnswerError(ValueError):
    """An answer that is not accept/decline."""


def answer_link(link: ToolLink, user: Any, action: str) -> bool:
    """Record ``action`` on a pending link; False if it was already answered or closed."""
    if action not in STATES:
        raise LinkAnswerError(f"unknown answer {action!r}: accept or decline")
    updated = ToolLink.objects.filter(pk=link.pk, state=ToolLink.State.PENDING).update(
        state=STATES[action], answered_at=timezone.now(), answered_by=user
    )
    if updated:
        record(
            "tool_link_answered",
            run_id=link.run_id,
            actor=user.get_username(),
            payload={"link": link.pk, "server": link.server, "tool": link.tool, "answer": action},
        )
    return bool(updated)
