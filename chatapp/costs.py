"""Costs summed over rounds: per run, conversation and user, for the trace, the chart, the auditor
and the exports. A round without a cost (no price, or a price missing for a kind of token it used)
is counted as unpriced, so a total never looks complete when it is not."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Count, Q, QuerySet, Sum
from django.utils.translation import gettext, gettext_lazy, ngettext

from chatapp.models import Round, Run
from chatapp.pricing import NO_PRICE_FOR


def money(amount: Decimal) -> str:
    places = Decimal("0.0001") if amount >= Decimal("0.01") else Decimal("0.000001")
    return f"{settings.COST_CURRENCY} {amount.quantize(places)}"


@dataclass(frozen=True, slots=True)
class CostTotal:
    amount: Decimal = Decimal(0)  # of the priced rounds
    priced: int = 0
    unpriced: int = 0

    def __str__(self) -> str:
        if not self.priced:
            return gettext("unknown") if self.unpriced else "–"
        if self.unpriced:
            unpriced = ngettext("%(n)s round unpriced", "%(n)s rounds unpriced", self.unpriced) % {
                "n": self.unpriced
            }
            return f"≥ {money(self.amount)} ({unpriced})"
        return money(self.amount)

    def to_dict(self) -> dict[str, Any]:
        return {
            "amount": str(self.amount) if self.priced else None,
            "currency": settings.COST_CURRENCY,
            "priced_rounds": self.priced,
            "unpriced_rounds": self.unpriced,
            "complete": self.priced > 0 and not self.unpriced,
        }


_AGGREGATES = {
    "amount": Sum("cost"),
    "priced": Count("pk", filter=Q(cost__isnull=False)),
    "unpriced": Count("pk", filter=Q(cost__isnull=True)),
}


# Round.cost's decimal_places: SQLite's SUM comes back with float-like extra places, PostgreSQL's not.
_PLACES = Decimal("0.00000001")


def _total(row: dict[str, Any]) -> CostTotal:
    amount = (row["amount"] or Decimal(0)).quantize(_PLACES)
    return CostTotal(amount, row["priced"], row["unpriced"])


def total(rounds: QuerySet[Round]) -> CostTotal:
    return _total(rounds.aggregate(**_AGGREGATES))


def total_of(rounds: Iterable[Round]) -> CostTotal:
    """Of rounds already loaded (the chat page has them)."""
    return total_of_values(r.cost for r in rounds)


def total_of_values(costs: Iterable[Decimal | None]) -> CostTotal:
    values = list(costs)
    priced = [c for c in values if c is not None]
    return CostTotal(sum(priced, Decimal(0)), len(priced), len(values) - len(priced))


def cost_label(cost: Decimal | None, note: str = "") -> str:
    if cost is not None:
        return money(cost)
    return gettext("unknown (%(why)s)") % {"why": _note(note)}


def _note(note: str) -> str:
    """A stored cost note (chatapp.pricing, in English) in the reader's language."""
    if not note:
        return gettext("no price")
    if note.startswith(NO_PRICE_FOR):
        kinds = ", ".join(str(KIND_WORDS.get(k, k)) for k in note[len(NO_PRICE_FOR) :].split(", "))
        return gettext("no price for %(kinds)s") % {"kinds": kinds}
    return gettext(note)


KIND_WORDS = {
    "input": gettext_lazy("input"),
    "cached read": gettext_lazy("cached read"),
    "cache write": gettext_lazy("cache write"),
    "output": gettext_lazy("output"),
    "reasoning": gettext_lazy("reasoning"),
}


def round_label(r: Round) -> str:
    return cost_label(r.cost, r.cost_note)


def per_run(run_ids: Iterable[int]) -> dict[int, CostTotal]:
    rows = Round.objects.filter(run_id__in=list(run_ids)).values("run_id").annotate(**_AGGREGATES)
    return {row["run_id"]: _total(dict(row)) for row in rows}


def per_user(runs: QuerySet[Run]) -> list[tuple[str, CostTotal]]:
    """Cost per user over ``runs`` (the auditor's filtered selection), most expensive first."""
    owner = "run__conversation__owner__username"
    rows = (
        Round.objects.filter(run__in=runs.order_by().values("pk"))
        .values(owner)
        .annotate(**_AGGREGATES)
        .order_by("-amount", owner)
    )
    return [(row[owner], _total(row)) for row in rows]
