"""The cost of a round, from its usage and the provider's price table, in Decimal (never floats).

Token kinds, each billed at its own price per million tokens (``ModelPrice``):

* ``input``: prompt tokens that were neither read from nor written to the prompt cache;
* ``cached_read`` / ``cache_write``: prompt tokens read from / written to the cache (both are part of
  ``prompt_tokens`` in ``Usage``);
* ``reasoning``: reasoning/thinking tokens (part of ``completion_tokens``);
* ``output``: the other completion tokens.

A kind that was used (more than zero tokens) and has no price makes the round's cost unknown:
``None`` with the missing prices named. It is never estimated from another price.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import connection
from django.utils.translation import gettext_noop

from chatapp.bound_cursor import bound_cursor
from chatapp.models import ModelPrice, ProviderConfig
from chatapp.models.pricing import PRICE_FIELDS

PER_TOKENS = Decimal(1_000_000)
CENT_FRACTIONS = Decimal("0.00000001")  # Round.cost's precision


@dataclass(frozen=True, slots=True)
class Cost:
    amount: Decimal | None
    note: str = ""  # why the amount is unknown


def token_kinds(usage: dict[str, Any]) -> dict[str, int] | None:
    """Tokens per billed kind, or None when the provider reported no usage."""
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if prompt is None or completion is None:
        return None
    cached, written = usage.get("cached_tokens") or 0, usage.get("cache_write_tokens") or 0
    reasoning = usage.get("reasoning_tokens") or 0
    return {
        "input": max(0, prompt - cached - written),
        "cached_read": cached,
        "cache_write": written,
        "output": max(0, completion - reasoning),
        "reasoning": reasoning,
    }


# Stored with the round in English (the worker has no reader's language); shown translated
# (chatapp.costs.cost_label). gettext_noop marks them for the catalogue.
NO_TABLE = gettext_noop("no price table for this model")
NO_USAGE = gettext_noop("the provider reported no usage")
NO_PRICE_FOR = "no price for "


def round_cost(usage: dict[str, Any], price: ModelPrice | None) -> Cost:
    if price is None:
        return Cost(None, NO_TABLE)
    kinds = token_kinds(usage)
    if kinds is None:
        return Cost(None, NO_USAGE)
    missing = [name for name in PRICE_FIELDS if kinds[name] and getattr(price, name) is None]
    if missing:
        return Cost(None, NO_PRICE_FOR + ", ".join(n.replace("_", " ") for n in missing))
    amount = sum((Decimal(kinds[n]) * getattr(price, n) for n in PRICE_FIELDS if kinds[n]), Decimal(0))
    return Cost((amount / PER_TOKENS).quantize(CENT_FRACTIONS))


def price_for(provider_name: str, *models: str) -> ModelPrice | None:
    """The most specific row: the first of ``models`` that has one, else the provider-wide row."""
    rows = {p.model: p for p in _price_rows(provider_name, [*models, ""])}
    for name in (*models, ""):
        if name in rows:
            return rows[name]
    return None


_FIELDS = tuple(ModelPrice._meta.concrete_fields)
# The ORM's query written out: every stored round of every run looks its price up, and building and
# compiling the ORM's join cost ~0.5 ms of CPU of its ~0.7 (docs/performance.md, session 16).
_SQL = (
    "SELECT " + ", ".join(f'p."{f.column}"' for f in _FIELDS) + f' FROM "{ModelPrice._meta.db_table}" p'  # noqa: S608
    f' JOIN "{ProviderConfig._meta.db_table}" c ON c.id = p.provider_id'
    " WHERE c.name = %s AND p.model = ANY(%s)"
)


def _price_rows(provider_name: str, models: list[str]) -> list[ModelPrice]:
    if connection.vendor != "postgresql":
        return list(ModelPrice.objects.filter(provider__name=provider_name, model__in=models))
    with bound_cursor(connection) as cursor:
        cursor.execute(_SQL, [provider_name, models])
        rows = cursor.fetchall()
    names = [f.attname for f in _FIELDS]
    return [ModelPrice.from_db(connection.alias, names, list(row)) for row in rows]
