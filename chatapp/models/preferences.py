"""What a person chose for themselves and keeps across sessions and devices (the UI language)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class UserPreference(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="preference"
    )
    # A code from settings.LANGUAGES; "" follows the browser (Accept-Language).
    language = models.CharField(max_length=16, blank=True)

    def __str__(self) -> str:
        return f"{self.user_id}: {self.language or 'browser'}"
