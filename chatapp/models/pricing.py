"""What each provider's models cost, per million tokens, as the admin enters it (never guessed)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.validators import MinValueValidator
from django.db import models
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

PRICE_FIELDS = ("input", "output", "cached_read", "cache_write", "reasoning")


def _price(label: StrOrPromise, help_text: StrOrPromise) -> models.DecimalField:
    return models.DecimalField(
        label,
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text=format_lazy(_("{}; empty = unknown"), help_text),
    )


class ModelPrice(models.Model):
    """One row of a provider's price table. An empty price is *unknown*: a round that used tokens of
    that kind gets no cost (shown as unknown, with the missing price named), never a guessed one."""

    provider = models.ForeignKey(
        "chatapp.ProviderConfig", verbose_name=_("provider"), on_delete=models.CASCADE, related_name="prices"
    )
    model = models.CharField(
        _("model"),
        max_length=120,
        blank=True,
        help_text=_("the model name; empty = this provider's other models"),
    )
    # Prices per million tokens.
    input = _price(_("input"), _("uncached input tokens"))
    output = _price(_("output"), _("output tokens other than reasoning"))
    cached_read = _price(_("cached read"), _("input tokens read from the prompt cache"))
    cache_write = _price(_("cache write"), _("input tokens written to the prompt cache"))
    reasoning = _price(_("reasoning"), _("thinking tokens (most providers bill them as output)"))

    class Meta:
        ordering = ["provider", "model"]
        verbose_name = _("model price")
        verbose_name_plural = _("model prices")
        constraints = [models.UniqueConstraint(fields=["provider", "model"], name="modelprice_unique_model")]

    def __str__(self) -> str:
        return f"{self.provider_id}/{self.model or '*'}"
