"""The tokenizer ratio learned per provider and model, persisted so every run starts calibrated.

Each stored round gives one observation: the prompt tokens the provider reported against the raw
count the engine made for that request. It is folded into a moving average (recent rounds weigh
more: a conversation in another language shifts the ratio, one odd round does not wreck it), and
read back by ``load_run_context`` into ``LoopSettings.token_ratio``.
"""

from __future__ import annotations

from django.db import transaction

from agent import events as ev
from agent.context import Calibration
from chatapp.models import TokenCalibration

WEIGHT = 0.5  # of the newest observation


def learned_ratios(provider_name: str, model: str) -> tuple[float | None, float | None]:
    """(first-request ratio, appended-content ratio) learned for this provider and model."""
    row = TokenCalibration.objects.filter(provider_name=provider_name, model=model).first()
    return (row.ratio, row.appended_ratio) if row else (None, None)


def learn(provider_name: str, model: str, event: ev.RoundFinished, previous: dict | None) -> None:
    """Fold the round's observation in; a round without a raw count or a report teaches nothing.

    A run's first round teaches the first-request ratio; each later one teaches the ratio of what
    was appended since ``previous`` (the run's round before it, as stored).
    """
    raw, reported = event.request.get("raw_input_tokens"), event.usage.prompt_tokens
    if not raw or not reported:
        return
    with transaction.atomic():  # a savepoint inside the round's own transaction
        _fold(provider_name, model, raw, reported, previous)


def _fold(provider_name: str, model: str, raw: int, reported: int, previous: dict | None) -> None:
    row, _ = TokenCalibration.objects.select_for_update().get_or_create(
        provider_name=provider_name,
        model=model,
        defaults={"ratio": Calibration.from_observation(raw, reported).ratio},
    )
    if previous is None:
        row.ratio = Calibration.blend(
            row.ratio if row.samples else None, Calibration.from_observation(raw, reported).ratio, WEIGHT
        )
    else:
        before_raw = (previous.get("request") or {}).get("raw_input_tokens")
        before_reported = (previous.get("usage") or {}).get("prompt_tokens")
        if not before_raw or not before_reported or raw <= before_raw:
            return
        observed = Calibration.from_observation(raw - before_raw, reported - before_reported).ratio
        row.appended_ratio = Calibration.blend(row.appended_ratio, observed, WEIGHT)
    row.samples += 1
    row.save()
