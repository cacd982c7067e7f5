"""What each provider's models cost, per million tokens, as the admin enters it (never guessed)."""

from __future__ import annotations

from django.core.validators import MinValueValidator
from django.db import models

PRICE_FIELDS = ("input", "output", "cached_read", "cache_write", "reasoning")


def _price(label: str, help_text: str) -> models.DecimalField:
    return models.DecimalField(
        label,
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text=help_text + "; empty = unknown",
    )


class ModelPrice(models.Model):
    """One row of a provider's price table. An empty price is *unknown*: a round that used tokens of
    that kind gets no cost (shown as unknown, with the missing price named), never a guessed one."""

    provider = models.ForeignKey("chatapp.ProviderConfig", on_delete=models.CASCADE, related_name="prices")
    model = models.CharField(
        max_length=120, blank=True, help_text="the model name; empty = this provider's other models"
    )
    # Prices per million tokens.
    input = _price("input", "uncached input tokens")
    output = _price("output", "output tokens other than reasoning")
    cached_read = _price("cached read", "input tokens read from the prompt cache")
    cache_write = _price("cache write", "input tokens written to the prompt cache")
    reasoning = _price("reasoning", "thinking tokens (most providers bill them as output)")

    class Meta:
        ordering = ["provider", "model"]
        constraints = [models.UniqueConstraint(fields=["provider", "model"], name="modelprice_unique_model")]

    def __str__(self) -> str:
        return f"{self.provider_id}/{self.model or '*'}"
