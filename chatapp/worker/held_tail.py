"""The end of a live frame's text that waits for the next frame: a secret may be still arriving.

Secrets are redacted by value and by pattern (``chatapp/redaction.py``), which needs the whole secret
in one string. A model streams a key it echoes as a dozen tokens of a few characters; a frame
boundary inside it would show its first half in one frame and its second in the next, neither of
which matches. So a frame ends before its last word: the trailing run of characters a key can hold
(printable ASCII other than space), and a ``Bearer`` before it, are sent with the next frame, or with
the round's end. Words end every few characters in prose and code, so the wait is one frame's window
for one word. A run longer than ``MAX_HELD`` (a base64 blob streamed as text) is held only in its
last ``MAX_HELD`` characters, so the page keeps moving; no key is that long.

Not covered: a registered secret with a space or a non-ASCII character in it, split by a frame
boundary at that character (the values redacted are API keys and tokens).
"""

from __future__ import annotations

import re

MAX_HELD = 512
_BEARER = re.compile(r"(?i)\bbearer\s+\Z")


def _is_key_char(ch: str) -> bool:
    return "!" <= ch <= "~"  # printable ASCII, no space


def split_tail(text: str) -> tuple[str, str]:
    """``text`` as (what may be shown now, what waits for the text after it)."""
    start = len(text)
    floor = max(0, len(text) - MAX_HELD)
    while start > floor and _is_key_char(text[start - 1]):
        start -= 1
    # "Bearer " may end the text with its token still to come, or stand before the held word.
    bearer = _BEARER.search(text, max(0, start - 64), start)
    if bearer is not None:
        start = bearer.start()
    return text[:start], text[start:]
