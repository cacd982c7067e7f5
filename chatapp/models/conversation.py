from __future__ import annotations

from django.conf import settings
from django.db import models

from chatapp.frames import group
from chatapp.models.fields import LargeTextField, LargeValuesJSONField


class Conversation(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations"
    )
    title = models.CharField(max_length=200, default="New conversation")
    provider = models.ForeignKey("chatapp.ProviderConfig", null=True, blank=True, on_delete=models.SET_NULL)
    model_override = models.CharField(max_length=120, blank=True)
    # Which tools are offered: {"servers": {"slug": bool}, "tools": {"name": bool}}; absent means on.
    tool_settings = models.JSONField(default=dict, blank=True)
    attached_context = models.JSONField(default=list, blank=True)
    # The leaf of the branch shown and sent to the model (see services/branches.py); null = the latest run.
    active_run = models.ForeignKey(
        "chatapp.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Soft delete: the owner no longer sees it (undo brings it back); auditors keep everything.
    deleted_at = models.DateTimeField(null=True, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.title

    @property
    def group_name(self) -> str:
        return group(self.pk)


class Message(models.Model):
    """A message of the conversation's history, in the neutral format of ``agent.messages``."""

    class Role(models.TextChoices):
        SYSTEM = "system"
        USER = "user"
        ASSISTANT = "assistant"
        TOOL = "tool"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    run = models.ForeignKey("chatapp.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # A user message follows the answer (run) it replies to; editing makes a sibling with the same parent.
    parent_run = models.ForeignKey(
        "chatapp.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="replies"
    )
    role = models.CharField(max_length=10, choices=Role.choices)
    # A long message or answer (or an image's bytes in the payload) is stored once (chatapp/blobs.py),
    # shared with the requests that carry it.
    content = LargeTextField(blank=True)
    # The full neutral message (tool calls, tool_call_id) for rebuilding the model's history.
    payload = LargeValuesJSONField(default=dict, blank=True)
    partial = models.BooleanField(default=False, help_text="cut short by a stop or an error")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"
