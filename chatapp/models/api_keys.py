"""Personal API keys: stored hashed, shown once, scoped, revocable (issue 13 item 2)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class ApiKey(models.Model):
    """A key is ``clk_<prefix>_<secret>``. The prefix finds the row; only a SHA-256 of the whole key
    is kept. The secret is 256 random bits, so a fast hash is enough (a slow password hash protects
    guessable secrets, and nobody guesses 2**256); the key itself is shown once and never stored."""

    class Scope(models.TextChoices):
        CHAT = "chat", _("chat (conversations, messages, runs, the OpenAI-compatible API)")
        TRACES = "traces", _("read traces")
        APPROVE = "approve", _("decide approvals")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="api_keys"
    )
    name = models.CharField(_("name"), max_length=100)
    prefix = models.CharField(_("prefix"), max_length=16, unique=True)
    key_hash = models.CharField(_("key hash"), max_length=64)
    scopes = models.JSONField(_("scopes"), default=list)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    expires_at = models.DateTimeField(_("expires at"), null=True, blank=True)
    last_used_at = models.DateTimeField(_("last used at"), null=True, blank=True)
    revoked_at = models.DateTimeField(_("revoked at"), null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("revoked by"),
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("API key")
        verbose_name_plural = _("API keys")

    def __str__(self) -> str:
        return f"{self.name} (clk_{self.prefix}_…)"


class ApiAuthFailure(models.Model):
    """Failed key checks per client address and minute: the brake on guessing keys."""

    address = models.CharField(_("address"), max_length=64)
    window = models.DateTimeField(_("window"))
    count = models.PositiveIntegerField(_("count"), default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["address", "window"], name="apiauthfailure_unique")]

    def __str__(self) -> str:
        return f"{self.address} {self.window:%H:%M}: {self.count}"
