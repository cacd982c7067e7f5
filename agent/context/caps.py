"""Capping large tool results: keep head and tail, state the cut (R-CTX-2, 000 §6.4)."""

from __future__ import annotations

DEFAULT_RESULT_CAP = 16_000


def cap_text(text: str, limit: int = DEFAULT_RESULT_CAP) -> tuple[str, bool]:
    """Return ``text`` cut to about ``limit`` characters, and whether anything was cut.

    Two thirds of the room go to the head (where results usually say what they are), one third to
    the tail (where totals and errors tend to be); the marker says how much was cut so the model
    never mistakes a cut result for a complete one.
    """
    if limit <= 0 or len(text) <= limit:
        return text, False
    head = (limit * 2) // 3
    tail = limit - head
    cut = len(text) - head - tail
    marker = (
        f"\n…[clearloop cut {cut} of {len(text)} characters here to fit the context; "
        "the head and the tail of the result are kept]…\n"
    )
    return text[:head] + marker + text[len(text) - tail :], True
