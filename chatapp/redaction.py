"""Secrets removed by value before anything is stored, logged or shown (R-TOOL-4).

Known secrets are the configured API keys (environment and providers stored in the database) plus
patterns that look like keys or bearer tokens wherever they appear.
"""

from __future__ import annotations

import os
import re
from typing import Any

from agent.replay import summarise

REDACTED = "[REDACTED]"
# Keys holding what a provider requires back byte for byte (agent/replay.py): a signature covers
# the thinking text, so a single replaced character makes the next request fail. These are kept
# verbatim in the stored event and round (``keep_replay=True``) and never rendered: everything
# shown goes through ``shown``, which reduces them to their size first.
REPLAY_KEYS = frozenset({"replay", "provider_extra"})
_PATTERNS = [
    re.compile(r"sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._\-~+/]{12,}=*"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
]
_SECRET_ENV = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SECRET_KEY", "CLEARLOOP_ENCRYPTION_KEY")
_extra: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a secret's value (e.g. a provider key loaded from the database) to redact it."""
    if value and len(value) >= 6:
        _extra.add(value)


def known_secrets() -> list[str]:
    values = {os.environ.get(name) or "" for name in _SECRET_ENV} | _extra
    return sorted((v for v in values if len(v) >= 6), key=len, reverse=True)


def redact_text(text: str) -> str:
    for secret in known_secrets():
        text = text.replace(secret, REDACTED)
    for pattern in _PATTERNS:
        text = pattern.sub(REDACTED, text)
    return text


def redact(value: Any, *, keep_replay: bool = False) -> Any:
    """Redact secrets in any JSON-like value; header-like keys are blanked whatever they hold.

    ``keep_replay`` leaves the replay keys untouched: only for what is stored to be sent back.
    """
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        return [redact(v, keep_replay=keep_replay) for v in value]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if isinstance(key, str) and key.lower() in {"authorization", "x-api-key", "api_key", "api-key"}:
                out[key] = REDACTED
            elif keep_replay and key in REPLAY_KEYS:
                out[key] = item
            else:
                out[key] = redact(item, keep_replay=keep_replay)
        return out
    return value


def shown(value: Any) -> Any:
    """What may be shown of a stored value: sealed blobs as "[opaque, N bytes]", secrets removed."""
    return redact(summarise(value))
