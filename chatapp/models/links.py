from __future__ import annotations

from django.conf import settings
from django.db import models


class ToolLink(models.Model):
    """A link an MCP server asked the run's user to open (URL-mode elicitation, MCP 2025-11-25).

    ``pending`` until the user opens it (``accepted``), declines it, or the wait runs out
    (``cancelled``); ``shown`` when the server only needs it opened before the call is retried
    (error -32042) and waits for no answer. The page renders the URL as text and as a link opened by
    the user's own click; clearloop never fetches it.
    """

    class State(models.TextChoices):
        PENDING = "pending"
        ACCEPTED = "accepted", "opened"
        DECLINED = "declined"
        CANCELLED = "cancelled", "no answer"
        SHOWN = "shown"

    run = models.ForeignKey("chatapp.Run", on_delete=models.CASCADE, related_name="links")
    call_id = models.CharField(max_length=200)
    tool = models.CharField(max_length=200)
    server = models.CharField(max_length=64)
    message = models.TextField(blank=True)
    url = models.TextField()
    elicitation_id = models.CharField(max_length=200, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.server}: {self.url}"
