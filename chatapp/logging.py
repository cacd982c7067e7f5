"""A logging filter that removes configured secrets from every record (R-TOOL-4)."""

from __future__ import annotations

import logging

from chatapp.redaction import redact_text


class RedactSecretsFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact_text(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return True
