"""A secret a model streams token by token never reaches a live frame (stored, sent, replayed).

A real model streams a key it echoes (from a tool's output, say) as a dozen tokens of a few characters
each: no single delta holds anything a secret's value or pattern matches, so redacting each delta
(``redaction.redact_event``) let every piece through, and the frames stored and sent to the page held
the whole key. The coalescer redacts the text of each frame and holds back its last word until the
next frame or the round's end, so a secret split over deltas, or over frames, is redacted as a whole.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import pytest
from django.contrib.auth import get_user_model

from agent.providers import types as pt
from chatapp import redaction
from chatapp.models import Run, RunEvent
from chatapp.redaction import REDACTED, register_secret
from tests.loop.loop_doubles import FuncToolbox, reply
from tests.worker.scenario import drive, new_run

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")  # live frames use "deltas"

REGISTERED = "hunter2-Registered-Value"
# Values no other test registers: a registered secret that is a prefix of one of these (another test's
# "Bearer abc", say, in the same process) is redacted by value first and leaves the rest showing.
SECRETS = [
    "sk-proj-Qm4TzW8rKx2VbN6pLs0Y",
    "Bearer Tk9wQz3mVx7LpR2sYb8n",
    REGISTERED,
    "ghp_Zr5Yx1Wq7Tp3Ns9Mk4Lj8Hg2Fd6Sa0",
]


@pytest.fixture(autouse=True)
def registered():
    register_secret(REGISTERED)
    yield
    redaction._extra.discard(REGISTERED)  # the registry only grows; this test's secret must not stay


@dataclasses.dataclass
class Chunked:
    """Streams ``text`` (and ``reasoning``) in pieces of ``size`` characters, as a tokenizer would, each
    ``pause`` seconds after the last (longer than the coalescing window: each piece is its own frame)."""

    text: str
    size: int
    reasoning: str = ""
    pause: float = 0.03
    name: str = "chunked"
    model: str = "chunked-model"

    async def stream(self, request: pt.ModelRequest) -> AsyncIterator[pt.ModelEvent]:
        for at in range(0, len(self.reasoning), self.size):
            await asyncio.sleep(self.pause)
            yield pt.ReasoningDelta(self.reasoning[at : at + self.size], 0)
        for at in range(0, len(self.text), self.size):
            await asyncio.sleep(self.pause)
            yield pt.TextDelta(self.text[at : at + self.size], 0)
        answer = reply(self.text)
        yield pt.Finish("stop", "stop", 0)
        yield pt.UsageReport(answer.usage)
        yield pt.ResponseDone(answer)


def _frames(run: Run) -> list[dict]:
    return [e.payload for e in RunEvent.objects.filter(run=run, type="delta").order_by("seq")]


@pytest.mark.parametrize("coalesce_ms", [0, 20])  # 0: a frame per delta, the worst case
@pytest.mark.parametrize("size", [3, 7])
def test_a_secret_streamed_in_pieces_is_redacted_in_every_frame(coalesce_ms, size):
    owner = get_user_model().objects.create_user(f"split{coalesce_ms}-{size}")
    text = "Here they are: " + ", ".join(SECRETS) + ". 那就是全部。 Done now."
    reasoning = f"The tool printed {SECRETS[0]} and {REGISTERED} ok"
    run = new_run(owner)
    step = drive(run, Chunked(text, size, reasoning), FuncToolbox({}), coalesce_ms=coalesce_ms)
    assert type(step).__name__ == "NextStepFinalOutput"
    frames = _frames(run)
    shown = "".join(f["text"] for f in frames)
    thought = "".join(f["reasoning"] for f in frames)
    for secret in SECRETS:
        token = secret.split()[-1]
        assert token not in shown and token not in thought, (secret, frames)
        # Nor any long piece of it: a frame boundary inside a key must not show its tail either.
        assert token[-12:] not in shown, (secret, frames)
    assert shown.count(REDACTED) == len(SECRETS) and thought.count(REDACTED) == 2, (shown, thought)
    # The words around the secrets all arrive, in order: nothing else is held back or lost.
    assert shown.startswith("Here they are: ") and shown.endswith(". 那就是全部。 Done now.")
    assert shown == redaction.redact_text(text)


def test_plain_text_goes_out_as_it_is_streamed(monkeypatch):
    from chatapp.worker import held_tail

    monkeypatch.setattr(held_tail, "known_secrets", list)  # the environment's keys would hold their starts
    owner = get_user_model().objects.create_user("plain")
    text = "The quick brown fox jumps over the lazy dog, twice over, and then once more."
    run = new_run(owner)
    drive(run, Chunked(text, 5), FuncToolbox({}), coalesce_ms=0)
    frames = [f["text"] for f in _frames(run)]
    assert "".join(frames) == text
    # A frame per delta at a 0 ms window, less those whose end might start a key ("s", "b"...).
    assert len(frames) >= len(text.split()) - 2, frames
