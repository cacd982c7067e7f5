"""The words a person reads for stored states (runs, tool calls, links, approvals), translated.

The pages show these through the ``status_word`` template filter, in the active language; the
models' choices use the same words as their labels (Django's admin shows those), so the two agree.
static/js/chat.js holds the same words for its live badge updates.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

WORDS = {
    "queued": _("Queued"),
    "running": _("Running"),
    "awaiting_approval": _("Awaiting approval"),
    "awaiting_sign_in": _("Awaiting sign-in"),
    "succeeded": _("Succeeded"),
    "failed": _("Failed"),
    "cancelled": _("Cancelled"),
    "denied": _("Denied"),
    "proposed": _("Proposed"),
    "invalid": _("Invalid"),
    "approved": _("Approved"),
    "unknown": _("Unknown"),
    # A round's kind (agent/events.py).
    "normal": pgettext_lazy("round", "normal"),
    "continuation": pgettext_lazy("round", "continuation"),
    "final": pgettext_lazy("round", "final answer"),
    # Who wrote a message.
    "user": _("user"),
    "assistant": _("assistant"),
    "tool": _("tool"),
    # A tool's risk tier (chatapp.models.ToolPolicy.Tier).
    "read_only": _("read-only"),
    "low": _("low"),
    "high": _("high"),
    # A link a tool's server asked the user to open.
    "pending": pgettext_lazy("link", "Waiting"),
    "accepted": pgettext_lazy("link", "Opened"),
    "declined": pgettext_lazy("link", "Declined"),
    "shown": pgettext_lazy("link", "Shown"),
    "no_answer": pgettext_lazy("link", "No answer"),
}


def word(value: str) -> str:
    return str(WORDS.get(value, value))
