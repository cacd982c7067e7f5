"""Which end of a live frame's text waits for the next frame (``chatapp/worker/held_tail.py``)."""

from __future__ import annotations

import pytest

from chatapp.worker import held_tail
from chatapp.worker.held_tail import MAX_HELD, split_tail


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    # Only this secret: the environment's own (SECRET_KEY, a CI's keys) would hold the ends that start them.
    monkeypatch.setattr(held_tail, "known_secrets", lambda: ["Zx8-registered-value"])


@pytest.mark.parametrize(
    ("text", "held"),
    [
        ("The quick brown fox", ""),  # ordinary words go out at once
        ("two words", "s"),  # could be "sk-...": only that letter waits
        ("Here: sk-pr", "sk-pr"),
        ("key=sk-proj-Qm4TzW8rKx2VbN6pLs0Y", "sk-proj-Qm4TzW8rKx2VbN6pLs0Y"),  # may go on
        ("key=sk-proj-Qm4TzW8rKx2VbN6pLs0Y,", ""),  # it ended: redacted whole in this frame
        ("token ghp_Zr5Y", "ghp_Zr5Y"),
        ("aws AKIAQ", "AKIAQ"),
        ("Authorization: Bear", "Bear"),
        ("Authorization: Bearer ", "Bearer "),  # its token is still to come
        ("Authorization: bearer Tk9wQz", "bearer Tk9wQz"),
        ("password Zx8-reg", "Zx8-reg"),  # the start of a registered secret
        ("那就是全部。", ""),
        ("", ""),
    ],
)
def test_what_waits(text, held):
    shown, waiting = split_tail(text)
    assert (shown + waiting, waiting) == (text, held)


def test_a_long_run_is_held_at_most_in_its_last_characters():
    # A blob streamed as text keeps the page moving; no key is that long.
    for text in ("blob: sk-" + "A" * 2000, "sk-" + "b" * 600):
        shown, waiting = split_tail(text)
        assert shown + waiting == text and len(waiting) <= MAX_HELD and shown.startswith(text[:9])
