"""Remove secrets from a request before it is stored or shown (R-MSG-2, R-TOOL-4)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[REDACTED]"

# Header names that carry credentials: never stored, whatever their value.
_SECRET_HEADER = re.compile(r"authorization|api[-_]?key|token|secret|cookie|password", re.IGNORECASE)


def is_secret_header(name: str) -> bool:
    return bool(_SECRET_HEADER.search(name))


def redact_request(payload: Any, secrets: Iterable[str]) -> Any:
    """A deep copy of ``payload`` with credential headers dropped and every secret value replaced.

    Headers are recognised as the values under a ``headers`` key; a secret is replaced wherever it
    appears inside a string (an API key echoed into a URL, a prompt, an error message).
    """
    values = sorted({s for s in secrets if s}, key=len, reverse=True)
    return _walk(payload, values, in_headers=False)


def _walk(value: Any, secrets: list[str], *, in_headers: bool) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        result = {}
        for key, item in value.items():
            if in_headers and isinstance(key, str) and is_secret_header(key):
                continue
            result[key] = _walk(item, secrets, in_headers=key == "headers")
        return result
    if isinstance(value, (list, tuple)):
        return [_walk(item, secrets, in_headers=False) for item in value]
    return value
