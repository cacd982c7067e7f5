"""What the engine learned about a provider's tokenizer, kept across runs (R-CTX-1)."""

from __future__ import annotations

from django.db import models


class TokenCalibration(models.Model):
    """Provider-reported prompt tokens per token clearloop counts, for one provider and model.

    The worker folds every round's observation in (``chatapp.worker.calibration``) and hands the
    ratio to the engine, so the first round of the next run is calibrated too.
    """

    provider_name = models.CharField(max_length=40)
    model = models.CharField(max_length=120)
    ratio = models.FloatField(help_text="whole first requests: system prompt, tools, the user's message")
    appended_ratio = models.FloatField(null=True, help_text="what a tool loop appends between rounds")
    samples = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["provider_name", "model"], name="tokencalibration_unique_model")
        ]

    def __str__(self) -> str:
        return f"{self.provider_name}/{self.model}: ×{self.ratio:.3f} ({self.samples} rounds)"
