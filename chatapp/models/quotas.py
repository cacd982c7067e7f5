"""Quotas and budgets an admin sets per user or per group (issue 13 item 3; docs/quotas.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from chatapp.models.pricing import ModelPrice

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

BUDGETS = {
    "tokens_per_day": ("tokens", "day"),
    "tokens_per_month": ("tokens", "month"),
    "cost_per_day": ("cost", "day"),
    "cost_per_month": ("cost", "month"),
}


LIMIT_FIELDS = (
    "tokens_per_day",
    "tokens_per_month",
    "cost_per_day",
    "cost_per_month",
    "max_concurrent_runs",
    "messages_per_minute",
)


def _cost(label: StrOrPromise) -> models.DecimalField:
    return models.DecimalField(
        label,
        max_digits=14,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text=_("in COST_CURRENCY, from the price table; empty = no limit"),
    )


class Quota(models.Model):
    """Limits for one user, or for a group: each member alone, or the members together (``shared``).

    Every quota that applies to a person is checked (their own and each of their groups'); the first
    one reached stops them. Empty fields mean no limit of that kind.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="quotas",
        verbose_name=_("user"),
    )
    group = models.ForeignKey(
        "auth.Group",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="quotas",
        verbose_name=_("group"),
    )
    shared = models.BooleanField(
        _("shared"),
        default=False,
        help_text=_("group only: the limits hold for the members together, not for each member"),
    )
    tokens_per_day = models.PositiveBigIntegerField(
        _("tokens per day"), null=True, blank=True, help_text=_("empty = no limit")
    )
    tokens_per_month = models.PositiveBigIntegerField(
        _("tokens per month"), null=True, blank=True, help_text=_("empty = no limit")
    )
    cost_per_day = _cost(_("cost per day"))
    cost_per_month = _cost(_("cost per month"))
    max_concurrent_runs = models.PositiveIntegerField(
        _("max concurrent runs"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_("runs queued or running at once"),
    )
    messages_per_minute = models.PositiveIntegerField(
        _("messages per minute"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_("runs started in any 60 s"),
    )
    enabled = models.BooleanField(_("enabled"), default=True)
    note = models.CharField(_("note"), max_length=200, blank=True)

    class Meta:
        verbose_name = _("quota")
        verbose_name_plural = _("quotas")
        constraints = [
            models.CheckConstraint(
                condition=(Q(user__isnull=False) & Q(group__isnull=True))
                | (Q(user__isnull=True) & Q(group__isnull=False)),
                name="quota_user_xor_group",
            ),
            models.UniqueConstraint(
                fields=["user"], condition=Q(user__isnull=False), name="quota_one_per_user"
            ),
            models.UniqueConstraint(
                fields=["group"], condition=Q(group__isnull=False), name="quota_one_per_group"
            ),
        ]

    def __str__(self) -> str:
        if self.user_id:
            return gettext("quota of %(user)s") % {"user": self.user}
        if self.shared:
            return gettext("quota of group %(group)s (together)") % {"group": self.group}
        return gettext("quota of group %(group)s (each member)") % {"group": self.group}

    def clean(self) -> None:
        problems = quota_problems(self)
        if problems:
            raise ValidationError(problems)


def quota_problems(quota: Quota) -> dict[str, str]:
    """Reasons a quota makes no sense, per field (the admin shows them beside the fields)."""
    problems: dict[str, str] = {}
    if bool(quota.user_id) == bool(quota.group_id):
        problems["user"] = gettext("Choose either a user or a group.")
    if quota.shared and not quota.group_id:
        problems["shared"] = gettext("Only a group's quota can be shared by its members.")
    values = {f: getattr(quota, f) for f in BUDGETS} | {
        "max_concurrent_runs": quota.max_concurrent_runs,
        "messages_per_minute": quota.messages_per_minute,
    }
    for field, value in values.items():
        if value is not None and value < 0:
            problems[field] = gettext("A limit cannot be negative.")
    if all(v is None for v in values.values()):
        problems["tokens_per_day"] = gettext("Set at least one limit (an empty field means no limit).")
    for what in ("tokens", "cost"):
        day, month = values[f"{what}_per_day"], values[f"{what}_per_month"]
        if day is not None and month is not None and day > month:
            problems[f"{what}_per_day"] = (
                gettext("The daily token limit is above the monthly one.")
                if what == "tokens"
                else gettext("The daily cost limit is above the monthly one.")
            )
    costs = values["cost_per_day"] is not None or values["cost_per_month"] is not None
    if costs and not _any_price():
        problems["cost_per_day"] = gettext(
            "There are no prices in the price table (admin → Model prices), so no round has a cost "
            "and a cost budget could never be reached. Enter the prices first, or use token limits."
        )
    return problems


def _any_price() -> bool:
    fields = ("input", "output", "cached_read", "cache_write", "reasoning")
    return ModelPrice.objects.filter(
        Q(*[Q(**{f"{f}__isnull": False}) for f in fields], _connector=Q.OR)
    ).exists()
