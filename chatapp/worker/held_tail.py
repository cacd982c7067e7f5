"""The end of a live frame's text that waits for the next frame: a secret may be still arriving.

Secrets are redacted by value and by pattern (``chatapp/redaction.py``), which needs the whole secret
in one string. A model streams a key it echoes as a dozen tokens of a few characters; a frame
boundary inside it would show its first half in one frame and its second in the next, neither of
which matches. So a frame's text stops before the longest end of it that could be the start of a
secret: the beginning of a known secret's value, of a key pattern (``sk-``, ``ghp_``, ``AKIA``), or
``Bearer`` with what follows it. That end goes out with the next frame (or the round's end), whole
again. Ordinary words match none of these and go out at once; a word ending in ``s`` waits with its
``s`` only. A run of over ``MAX_HELD`` key characters is held only in its last ``MAX_HELD``.

Not covered: a registered secret with a space or a non-ASCII character in it, split by a frame
boundary at that character (the values redacted are API keys and tokens).
"""

from __future__ import annotations

import re

from chatapp.redaction import known_secrets

MAX_HELD = 512
_BEARER = re.compile(r"(?i)\bbearer\s+\Z")
# Every string that a match of one of redaction._PATTERNS can start with, up to its whole length.
_PATTERN_START = re.compile(
    r"s|sk|sk-[A-Za-z0-9_\-]*"
    r"|g|gh|gh[pousr]|gh[pousr]_[A-Za-z0-9]*"
    r"|A|AK|AKI|AKIA[0-9A-Z]*"
    r"|(?i:b|be|bea|bear|beare|bearer)"
)


def _is_key_char(ch: str) -> bool:
    return "!" <= ch <= "~"  # printable ASCII, no space: what keys and tokens are made of


def split_tail(text: str) -> tuple[str, str]:
    """``text`` as (what may be shown now, what waits for the text after it)."""
    start = len(text)
    floor = max(0, len(text) - MAX_HELD)
    while start > floor and _is_key_char(text[start - 1]):
        start -= 1
    # "Bearer " may end the text with its token still to come, or stand before the last word.
    bearer = _BEARER.search(text, max(0, start - 64), start)
    if bearer is not None:
        return text[: bearer.start()], text[bearer.start() :]
    secrets = known_secrets()
    for at in range(start, len(text)):  # the longest end first
        end = text[at:]
        if _PATTERN_START.fullmatch(end) or any(secret.startswith(end) for secret in secrets):
            return text[:at], end
    return text, ""
