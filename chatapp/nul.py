"""U+0000 (NUL) in stored text (review L6).

PostgreSQL refuses NUL in ``text`` and ``jsonb`` ("cannot contain NUL"); SQLite stores it. So that
both databases behave the same: a user's message with NUL is refused with a reason
(``services/runs.check_message``), a tool call whose arguments contain NUL is refused to the model
(``agent/loop/validation.py``), and whatever a model or tool still produces with NUL is stored with
U+FFFD in its place (``without_nul``), instead of failing the run with an SQL error.
"""

from __future__ import annotations

from typing import Any

from chatapp import json_text

NUL = "\x00"
REPLACEMENT = "\ufffd"


def without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace(NUL, REPLACEMENT) if NUL in value else value
    if isinstance(value, dict):
        return {without_nul(k): without_nul(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [without_nul(v) for v in value]
    return value


def encoded_without_nul(value: Any) -> tuple[Any, str]:
    """``(without_nul(value), its JSON text)``. The text is encoded anyway: when it shows no NUL (JSON
    escapes every one as ``\\u0000``), the value is kept as it is, with no walk over it."""
    text = json_text.dumps(value)
    if "\\u0000" not in text:
        return value, text
    value = without_nul(value)
    return value, json_text.dumps(value)
