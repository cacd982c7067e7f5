"""The tokenizer ratio the worker learns per provider and model survives the run (R-CTX-1)."""

from __future__ import annotations

import pytest

from agent import events as ev
from agent.providers import types as pt
from chatapp.models import TokenCalibration
from chatapp.worker.calibration import learn, learned_ratios


def finished(index: int, raw: int, reported: int) -> ev.RoundFinished:
    usage = pt.Usage(prompt_tokens=reported, completion_tokens=5)
    choice = pt.ChoiceResult(0, "ok", "", (), "stop", "stop")
    return ev.RoundFinished(
        round_index=index,
        kind="normal",
        provider="ds",
        model="deepseek-v4",
        request={"raw_input_tokens": raw},
        response=pt.AssembledResponse((choice,), usage),
        finish_reason="stop",
        finish_reason_raw="stop",
        usage=usage,
        ttft_ms=1.0,
        duration_ms=2.0,
    )


@pytest.mark.django_db(transaction=True)
def test_first_rounds_and_appended_content_are_learned_separately():
    assert learned_ratios("ds", "deepseek-v4") == (None, None)
    first = finished(0, 1000, 1200)
    learn("ds", "deepseek-v4", first, None)
    assert learned_ratios("ds", "deepseek-v4") == (1.2, None)
    # Round 2 appended 2000 raw tokens that the provider counted as 1000.
    learn(
        "ds",
        "deepseek-v4",
        finished(1, 3000, 2200),
        {"request": first.request, "usage": {"prompt_tokens": 1200}},
    )
    assert learned_ratios("ds", "deepseek-v4") == (1.2, 0.5)
    # A later run's first round moves the first-request ratio halfway.
    learn("ds", "deepseek-v4", finished(0, 1000, 1000), None)
    assert learned_ratios("ds", "deepseek-v4") == pytest.approx((1.1, 0.5))
    assert TokenCalibration.objects.get().samples == 3
    # A round with no report teaches nothing.
    learn("ds", "deepseek-v4", finished(0, 1000, 0), None)
    assert TokenCalibration.objects.get().samples == 3
