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


@pytest.mark.django_db(transaction=True)
def test_the_next_run_starts_with_the_ratio_the_worker_stored():
    """Across runs, through the worker's own store and loader: the rounds of one run are stored by
    ``persist_durable`` (which learns), and the next run's context carries the learned ratios into
    ``LoopSettings.token_ratio`` / ``appended_token_ratio`` (the driver copies them)."""
    from django.contrib.auth import get_user_model

    from chatapp.models import Conversation, Message, ProviderConfig, Run
    from chatapp.worker.context import load_run_context
    from chatapp.worker.store import persist_durable

    ProviderConfig.objects.create(
        name="ds", kind="openai_chat", preset="deepseek", base_url="https://api.deepseek.com/v1", model="deepseek-v4"
    )
    owner = get_user_model().objects.create_user("carol")
    convo = Conversation.objects.create(owner=owner, title="calibrated")

    def new_run(text: str, status: str) -> Run:
        question = Message.objects.create(conversation=convo, role="user", content=text)
        return Run.objects.create(
            conversation=convo, user_message=question, provider_name="ds", model="deepseek-v4", status=status
        )

    first = new_run("请读完这篇文章。", "succeeded")
    assert load_run_context(first.pk).token_ratio is None  # nothing learned yet: the run starts raw
    persist_durable(first.pk, 1, "round_finished", {}, finished(0, 1000, 600))
    persist_durable(first.pk, 2, "round_finished", {}, finished(1, 3000, 1600))
    second = load_run_context(new_run("再读一篇。", "queued").pk)
    assert second.token_ratio == pytest.approx(0.6)  # 600 reported for 1000 counted
    assert second.appended_token_ratio == pytest.approx(0.5)  # +1000 reported for +2000 counted
