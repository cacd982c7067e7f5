"""Large values, stored once: a string over ``LARGE_VALUE_MIN_CHARS`` in a run's rows is kept here,
keyed by its sha256, and the rows hold a reference (``chatapp/blobs.py``; issue 16 item 8, L10)."""

from __future__ import annotations

from django.db import models


class Blob(models.Model):
    # The address is the content's hash: the same value written by many rows (a tool result in its
    # event, its call, every later request) is one row, and an edited row no longer matches its key.
    sha256 = models.CharField(max_length=64, primary_key=True)
    chars = models.PositiveBigIntegerField()
    data = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"blob {self.sha256[:12]} ({self.chars} characters)"
