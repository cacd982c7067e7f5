"""The tokenizer ratio learned per provider and model, persisted so every run starts calibrated.

Each stored round gives one observation: the prompt tokens the provider reported against the raw
count the engine made for that request. It is folded into a moving average (recent rounds weigh
more: a conversation in another language shifts the ratio, one odd round does not wreck it), and
read back by ``load_run_context`` into ``LoopSettings.token_ratio``.

The row is shared by every run of the model, so the fold is one statement after the round's own
transaction has committed (``store.persist_durable_batch``): a round never holds its lock, and a
worker that dies in between loses one observation of a moving average, nothing of the run.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection
from django.utils import timezone

from agent import events as ev
from agent.context import Calibration
from chatapp.bound_cursor import bound_cursor
from chatapp.models import TokenCalibration

WEIGHT = 0.5  # of the newest observation


def learned_ratios(provider_name: str, model: str) -> tuple[float | None, float | None]:
    """(first-request ratio, appended-content ratio) learned for this provider and model."""
    # SQL: read at every run's start, and the ORM's building of the query cost more than running it.
    table = connection.ops.quote_name(TokenCalibration._meta.db_table)
    with bound_cursor(connection) as cursor:
        cursor.execute(
            f"SELECT ratio, appended_ratio FROM {table} WHERE provider_name = %s AND model = %s",  # noqa: S608
            [provider_name, model],
        )
        row = cursor.fetchone()
    return (row[0], row[1]) if row else (None, None)


@dataclass(frozen=True)
class Observation:
    """One round's evidence: the ratio of a whole first request, or (``appended``) of what a tool
    loop appended since the run's previous round. ``whole``: the round's whole-request ratio, the
    first-request ratio of a model seen for the first time on a later round."""

    provider_name: str
    model: str
    ratio: float
    appended: bool
    whole: float


def observe(
    provider_name: str, model: str, event: ev.RoundFinished, previous: dict | None
) -> Observation | None:
    """What the round teaches; None for a round without a raw count or a report.

    A run's first round teaches the first-request ratio; each later one teaches the ratio of what
    was appended since ``previous`` (the run's round before it, as stored).
    """
    raw, reported = event.request.get("raw_input_tokens"), event.usage.prompt_tokens
    if not raw or not reported:
        return None
    whole = Calibration.from_observation(raw, reported).ratio
    if previous is None:
        return Observation(provider_name, model, whole, appended=False, whole=whole)
    before_raw = (previous.get("request") or {}).get("raw_input_tokens")
    before_reported = (previous.get("usage") or {}).get("prompt_tokens")
    if not before_raw or not before_reported or raw <= before_raw:
        return None
    appended = Calibration.from_observation(raw - before_raw, reported - before_reported).ratio
    return Observation(provider_name, model, appended, appended=True, whole=whole)


def learn(provider_name: str, model: str, event: ev.RoundFinished, previous: dict | None) -> None:
    """Fold the round's observation in (``observe``, then ``fold``)."""
    observation = observe(provider_name, model, event, previous)
    if observation is not None:
        fold(observation)


def fold(observation: Observation) -> None:
    """Blend the observation into the model's row in one statement (insert or update, PostgreSQL and
    SQLite alike): ``Calibration.blend`` in SQL, so no read and no lock outlives the statement."""
    quote = connection.ops.quote_name
    table = quote(TokenCalibration._meta.db_table)
    column = quote("appended_ratio" if observation.appended else "ratio")
    prior = f"{table}.{column}"
    if observation.appended:
        known = f"{prior} IS NOT NULL"
        insert: tuple[float, float | None] = (observation.whole, observation.ratio)
    else:
        # A row made by an appended observation alone has no first-request sample yet: samples = 0
        # never happens through this function, but rows of an earlier version may have it.
        known = f"{table}.{quote('samples')} > 0"
        insert = (observation.ratio, None)
    new = f"excluded.{column}"
    blended = f"CASE WHEN {known} THEN {1 - WEIGHT} * {prior} + {WEIGHT} * {new} ELSE {new} END"
    samples, stamp = quote("samples"), quote("updated_at")
    names = ("provider_name", "model", "ratio", "appended_ratio", "samples", "updated_at")
    columns = ", ".join(quote(c) for c in names)
    # Names come from the model, values are bound.
    sql = (
        f"INSERT INTO {table} ({columns}) VALUES (%s, %s, %s, %s, 1, %s) "  # noqa: S608
        f"ON CONFLICT ({quote('provider_name')}, {quote('model')}) DO UPDATE SET {column} = {blended}, "
        f"{samples} = {table}.{samples} + 1, {stamp} = excluded.{stamp}"
    )
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    with bound_cursor(connection) as cursor:
        cursor.execute(sql, [observation.provider_name, observation.model, *insert, now])
