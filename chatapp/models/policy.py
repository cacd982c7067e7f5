from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class ToolPolicy(models.Model):
    class Tier(models.TextChoices):
        READ_ONLY = "read_only", _("read-only")
        LOW = "low", _("low")
        HIGH = "high", _("high")

    class ApprovalMode(models.TextChoices):
        NEVER = "never", _("never")
        ALWAYS = "always", _("always")
        WHEN_HIGH = "when_high", _("when high risk")

    class Approver(models.TextChoices):
        ADMIN = "admin", _("an admin (the approval queue)")
        USER = "user", _("the user (Allow once / Deny in the chat)")

    pattern = models.CharField(
        _("pattern"), max_length=120, unique=True, help_text=_("tool name or glob, e.g. github__*")
    )
    tier = models.CharField(_("tier"), max_length=10, choices=Tier.choices, default=Tier.HIGH)
    approval = models.CharField(
        _("approval"), max_length=10, choices=ApprovalMode.choices, default=ApprovalMode.WHEN_HIGH
    )
    enabled = models.BooleanField(_("enabled"), default=True)
    max_calls_per_run = models.PositiveIntegerField(_("max calls per run"), default=3)
    description_override = models.TextField(_("description override"), blank=True)
    allow_self_approval = models.BooleanField(_("allow self approval"), default=False)
    # Who answers when the call needs approval: low-risk tools can ask the person in the chat.
    approver = models.CharField(
        _("approver"), max_length=10, choices=Approver.choices, default=Approver.ADMIN
    )

    class Meta:
        ordering = ["pattern"]
        verbose_name = _("tool policy")
        verbose_name_plural = _("tool policies")

    def __str__(self) -> str:
        return self.pattern
