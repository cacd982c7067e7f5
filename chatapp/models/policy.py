from __future__ import annotations

from django.db import models


class ToolPolicy(models.Model):
    class Tier(models.TextChoices):
        READ_ONLY = "read_only"
        LOW = "low"
        HIGH = "high"

    class ApprovalMode(models.TextChoices):
        NEVER = "never"
        ALWAYS = "always"
        WHEN_HIGH = "when_high", "when high risk"

    class Approver(models.TextChoices):
        ADMIN = "admin", "an admin (the approval queue)"
        USER = "user", "the user (Allow once / Deny in the chat)"

    pattern = models.CharField(max_length=120, unique=True, help_text="tool name or glob, e.g. github__*")
    tier = models.CharField(max_length=10, choices=Tier.choices, default=Tier.HIGH)
    approval = models.CharField(max_length=10, choices=ApprovalMode.choices, default=ApprovalMode.WHEN_HIGH)
    enabled = models.BooleanField(default=True)
    max_calls_per_run = models.PositiveIntegerField(default=3)
    description_override = models.TextField(blank=True)
    allow_self_approval = models.BooleanField(default=False)
    # Who answers when the call needs approval: low-risk tools can ask the person in the chat.
    approver = models.CharField(max_length=10, choices=Approver.choices, default=Approver.ADMIN)

    class Meta:
        ordering = ["pattern"]
        verbose_name_plural = "tool policies"

    def __str__(self) -> str:
        return self.pattern
