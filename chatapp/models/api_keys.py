"""Personal API keys: stored hashed, shown once, scoped, revocable (issue 13 item 2)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiKey(models.Model):
    """A key is ``clk_<prefix>_<secret>``. The prefix finds the row; only a SHA-256 of the whole key
    is kept. The secret is 256 random bits, so a fast hash is enough (a slow password hash protects
    guessable secrets, and nobody guesses 2**256); the key itself is shown once and never stored."""

    class Scope(models.TextChoices):
        CHAT = "chat", "chat (conversations, messages, runs, the OpenAI-compatible API)"
        TRACES = "traces", "read traces"
        APPROVE = "approve", "decide approvals"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True)
    key_hash = models.CharField(max_length=64)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} (clk_{self.prefix}_…)"


class ApiAuthFailure(models.Model):
    """Failed key checks per client address and minute: the brake on guessing keys."""

    address = models.CharField(max_length=64)
    window = models.DateTimeField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["address", "window"], name="apiauthfailure_unique")]

    def __str__(self) -> str:
        return f"{self.address} {self.window:%H:%M}: {self.count}"
