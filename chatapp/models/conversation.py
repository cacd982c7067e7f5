from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from chatapp.frames import group
from chatapp.models.fields import LargeTextField, LargeValuesJSONField


class Conversation(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="conversations",
        verbose_name=_("owner"),
    )
    title = models.CharField(_("title"), max_length=200, default="New conversation")
    provider = models.ForeignKey(
        "chatapp.ProviderConfig", verbose_name=_("provider"), null=True, blank=True, on_delete=models.SET_NULL
    )
    model_override = models.CharField(_("model override"), max_length=120, blank=True)
    # Which tools are offered: {"servers": {"slug": bool}, "tools": {"name": bool}}; absent means on.
    tool_settings = models.JSONField(_("tool settings"), default=dict, blank=True)
    attached_context = models.JSONField(_("attached context"), default=list, blank=True)
    # The leaf of the branch shown and sent to the model (see services/branches.py); null = the latest run.
    active_run = models.ForeignKey(
        "chatapp.Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("active run"),
    )
    # Made by the web's home page (or "New conversation") to hold a first message: while it has no
    # message and no file it is that user's draft, handed out again and listed nowhere (not in the
    # sidebar, not by the API). A conversation created through the API is never a draft.
    draft = models.BooleanField(_("draft"), default=False)
    # Soft delete: the owner no longer sees it (undo brings it back); auditors keep everything.
    deleted_at = models.DateTimeField(_("deleted at"), null=True, blank=True, db_index=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        verbose_name = _("conversation")
        verbose_name_plural = _("conversations")
        # A user's list, newest first (the sidebar; the send's "is it on top?") reads only its rows.
        indexes = [models.Index(fields=["owner", "-updated_at"], name="conversation_owner_recent")]

    def __str__(self) -> str:
        return self.title

    @property
    def group_name(self) -> str:
        return group(self.pk)


class Message(models.Model):
    """A message of the conversation's history, in the neutral format of ``agent.messages``."""

    class Role(models.TextChoices):
        SYSTEM = "system", _("system")
        USER = "user", _("user")
        ASSISTANT = "assistant", _("assistant")
        TOOL = "tool", _("tool")

    conversation = models.ForeignKey(
        Conversation, verbose_name=_("conversation"), on_delete=models.CASCADE, related_name="messages"
    )
    run = models.ForeignKey(
        "chatapp.Run",
        verbose_name=_("run"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # A user message follows the answer (run) it replies to; editing makes a sibling with the same parent.
    parent_run = models.ForeignKey(
        "chatapp.Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="replies",
        verbose_name=_("parent run"),
    )
    role = models.CharField(_("role"), max_length=10, choices=Role.choices)
    # A long message or answer (or an image's bytes in the payload) is stored once (chatapp/blobs.py),
    # shared with the requests that carry it.
    content = LargeTextField(_("content"), blank=True)
    # The full neutral message (tool calls, tool_call_id) for rebuilding the model's history.
    payload = LargeValuesJSONField(_("payload"), default=dict, blank=True)
    partial = models.BooleanField(_("partial"), default=False, help_text=_("cut short by a stop or an error"))
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["id"]
        verbose_name = _("message")
        verbose_name_plural = _("messages")

    def __str__(self) -> str:
        from chatapp.status_words import word

        return f"{word(self.role)}: {self.content[:40]}"

    def attached(self) -> list:
        """The files attached to this question: its own uploads, or for an edited question the ones it
        kept from the question it edits (``payload["attachment_ids"]``; an upload row belongs to the
        message it was first sent with)."""
        own = list(self.uploads.all())
        kept = (self.payload or {}).get("attachment_ids") if not own else None
        if kept:
            return list(self.conversation.uploads.filter(pk__in=kept).order_by("id"))
        return own
