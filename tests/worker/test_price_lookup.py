"""A stored round's price is looked up with one SQL statement written out (chatapp/pricing.py): it
finds the rows the ORM's query found, with the same values, and the most specific one wins."""

from __future__ import annotations

from decimal import Decimal

import pytest

from chatapp.models import ModelPrice, ProviderConfig
from chatapp.pricing import _price_rows, price_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def tables():
    p = ProviderConfig.objects.create(
        name="p", kind="openai_chat", base_url="http://127.0.0.1:9/v1", model="m1"
    )
    q = ProviderConfig.objects.create(
        name="q", kind="openai_chat", base_url="http://127.0.0.1:9/v1", model="m1"
    )
    ModelPrice.objects.create(provider=p, model="", input=Decimal("1.5"), output=Decimal("2"))
    ModelPrice.objects.create(
        provider=p, model="m1", input=Decimal("0.25"), output=Decimal("1.25"), cached_read=Decimal("0.025")
    )
    ModelPrice.objects.create(provider=q, model="m1", input=Decimal("9"), output=None)


def _orm(provider: str, models: list[str]) -> list[ModelPrice]:
    return list(ModelPrice.objects.filter(provider__name=provider, model__in=models))


def _values(rows: list[ModelPrice]) -> list[dict]:
    fields = [f.attname for f in ModelPrice._meta.concrete_fields]
    return sorted(({name: getattr(row, name) for name in fields} for row in rows), key=lambda v: v["id"])


@pytest.mark.parametrize(
    ("provider", "models"),
    [("p", ["m1", ""]), ("p", ["m2", ""]), ("q", ["m1", "m2", ""]), ("q", ["m2", ""]), ("none", ["m1", ""])],
)
def test_the_rows_found_equal_the_orms(tables, provider, models):
    assert _values(_price_rows(provider, models)) == _values(_orm(provider, models))


def test_the_most_specific_row_wins(tables):
    assert price_for("p", "m1", "m1").cached_read == Decimal("0.025")
    assert price_for("p", "m2", "m1").input == Decimal("0.25")  # the second name has a row
    assert price_for("p", "m2").input == Decimal("1.5")  # the provider-wide row
    assert price_for("q", "m1").output is None  # an unknown price stays unknown
    assert price_for("q", "m2") is None and price_for("none", "m1") is None
