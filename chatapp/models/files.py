from __future__ import annotations

from django.conf import settings
from django.db import models


class Upload(models.Model):
    """A file the user put into a conversation's workspace (the file itself lives on disk).

    The row says who wrote the file (the panel's "uploaded by you") and which message it was attached
    to; it stays when the file is deleted (``deleted_at``), so the history of the workspace is kept.
    """

    conversation = models.ForeignKey("chatapp.Conversation", on_delete=models.CASCADE, related_name="uploads")
    message = models.ForeignKey(
        "chatapp.Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="uploads"
    )
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=255, help_text="the stored name, relative to the workspace")
    original_name = models.CharField(max_length=400, blank=True, help_text="as the browser sent it")
    size = models.PositiveBigIntegerField()
    content_type = models.CharField(max_length=120, blank=True)
    sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.name


class ShareLink(models.Model):
    """A read-only snapshot of a conversation, reachable by its token until revoked."""

    conversation = models.ForeignKey("chatapp.Conversation", on_delete=models.CASCADE, related_name="shares")
    token = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    public = models.BooleanField(
        default=False, help_text="reachable without signing in (if the admin allows)"
    )
    snapshot = models.JSONField(help_text="the conversation's export when shared, secrets redacted")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"share of conversation {self.conversation_id}"
