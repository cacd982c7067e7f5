"""Cost (issue 10 item 5): the admin's price table, Decimal cost per round as the worker stores it,
and the totals per run, conversation and user on every page that shows usage, and in the exports."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.test import Client

from agent import events as ev
from agent.providers import types as pt
from chatapp.models import Conversation, Message, ModelPrice, ProviderConfig, Round, Run
from chatapp.pricing import round_cost, token_kinds
from chatapp.worker.store import persist_durable

pytestmark = pytest.mark.django_db(transaction=True)


def price(**kw) -> ModelPrice:
    provider = ProviderConfig.objects.get_or_create(
        name="acme", defaults={"kind": "openai_chat", "preset": "openai", "base_url": "https://x/v1", "model": "m1"}
    )[0]
    return ModelPrice.objects.create(provider=provider, **kw)


USAGE = {
    "prompt_tokens": 120_000,  # of which 100,000 read from and 5,000 written to the cache
    "completion_tokens": 9_000,  # of which 6,000 reasoning
    "cached_tokens": 100_000,
    "cache_write_tokens": 5_000,
    "reasoning_tokens": 6_000,
}


def test_round_cost_is_exact_decimal_per_token_kind():
    row = price(model="m1", input=Decimal("3"), output=Decimal("15"), cached_read=Decimal("0.30"),
                cache_write=Decimal("3.75"), reasoning=Decimal("15"))
    assert token_kinds(USAGE) == {"input": 15_000, "cached_read": 100_000, "cache_write": 5_000,
                                  "output": 3_000, "reasoning": 6_000}
    # 15k×3 + 100k×0.30 + 5k×3.75 + 3k×15 + 6k×15, per million
    assert round_cost(USAGE, row).amount == Decimal("0.22875000")


@pytest.mark.parametrize(
    ("prices", "usage", "note"),
    [
        ({"input": Decimal("3"), "output": Decimal("15")}, USAGE, "no price for cached read, cache write, reasoning"),
        ({"input": Decimal("3")}, {"prompt_tokens": 10, "completion_tokens": 5}, "no price for output"),
        ({"input": Decimal("3"), "output": Decimal("15")}, {"prompt_tokens": None, "completion_tokens": None},
         "the provider reported no usage"),
    ],
)
def test_a_missing_price_makes_the_cost_unknown_never_guessed(prices, usage, note):
    cost = round_cost(usage, price(model="m1", **prices))
    assert cost.amount is None and cost.note == note


def test_kinds_with_no_tokens_need_no_price():
    row = price(model="m1", input=Decimal("2"), output=Decimal("8"))
    assert round_cost({"prompt_tokens": 1000, "completion_tokens": 500}, row).amount == Decimal("0.00600000")
    assert round_cost({"prompt_tokens": 1, "completion_tokens": 1}, None).note == "no price table for this model"


def make_run(owner, provider: str = "acme", model: str = "m1") -> Run:
    convo = Conversation.objects.create(owner=owner, title="priced")
    question = Message.objects.create(conversation=convo, role="user", content="How much?")
    return Run.objects.create(conversation=convo, user_message=question, provider_name=provider, model=model,
                              status="succeeded")


def store_round(run: Run, index: int, usage: dict, seq: int) -> Round:
    u = pt.Usage(**usage)
    choice = pt.ChoiceResult(0, "ok", "", (), "stop", "stop")
    event = ev.RoundFinished(round_index=index, kind="normal", provider=run.provider_name, model="m1-2026-10",
                             request={"raw_input_tokens": 100}, response=pt.AssembledResponse((choice,), u),
                             finish_reason="stop", finish_reason_raw="stop", usage=u, ttft_ms=1.0, duration_ms=2.0)
    persist_durable(run.pk, seq, "round_finished", {}, event)
    return Round.objects.get(run=run, index=index)


def test_the_worker_prices_each_round_when_it_stores_it_and_the_table_can_change_later(cast):
    row = price(model="m1", input=Decimal("1"), output=Decimal("2"))
    run = make_run(cast["alice"])
    first = store_round(run, 0, {"prompt_tokens": 1000, "completion_tokens": 1000}, 1)
    assert first.cost == Decimal("0.003") and first.cost_note == ""
    row.input = Decimal("100")
    row.save()
    first.refresh_from_db()
    assert first.cost == Decimal("0.003")  # priced at the prices in force when it ran
    # A provider-wide row (empty model) prices the provider's other models.
    price(model="", input=Decimal("10"), output=Decimal("10"))
    other = store_round(make_run(cast["alice"], model="m2"), 0, {"prompt_tokens": 1000, "completion_tokens": 0}, 1)
    assert other.cost == Decimal("0.01")


def pages_for(cast, run: Run) -> dict[str, str]:
    owner, auditor = Client(), Client()
    owner.force_login(cast["alice"])
    auditor.force_login(cast["otto"])
    export = auditor.get("/audit/export.jsonl")
    return {
        "chat": owner.get(f"/c/{run.conversation_id}/").content.decode(),
        "runs": auditor.get("/audit/").content.decode(),
        "run": auditor.get(f"/audit/runs/{run.pk}/").content.decode(),
        "jsonl": b"".join(export.streaming_content).decode(),
        "otel": auditor.get(f"/audit/runs/{run.pk}/otel.json").content.decode(),
    }


def test_costs_per_round_run_conversation_and_user_are_shown_and_exported(cast):
    price(model="m1", input=Decimal("2"), output=Decimal("10"))
    run = make_run(cast["alice"])
    store_round(run, 0, {"prompt_tokens": 10_000, "completion_tokens": 1_000}, 1)  # 0.02 + 0.01
    store_round(run, 1, {"prompt_tokens": 20_000, "completion_tokens": 500, "reasoning_tokens": 200}, 2)
    pages = pages_for(cast, run)
    chat = pages["chat"]
    assert "USD 0.0300" in chat  # round 1
    assert "unknown (no price for reasoning)" in chat  # round 2: reasoning tokens, no reasoning price
    assert "≥ USD 0.0300 (1 round unpriced)" in chat  # the run, and the conversation under the chart
    assert 'data-role="conversation-cost">≥ USD 0.0300 (1 round unpriced)' in chat
    # The usage chart prices each bar (its tooltip and the table read out to screen readers).
    assert "+ 1,000 completion tokens, cost USD 0.0300</title>" in chat
    assert "+ 500 completion tokens, cost unknown (no price for reasoning)</title>" in chat
    assert "≥ USD 0.0300 (1 round unpriced)" in pages["runs"]
    assert 'data-user="alice"' in pages["runs"]  # cost by user
    assert "unknown (no price for reasoning)" in pages["run"]
    exported = json.loads(pages["jsonl"].splitlines()[0])
    assert exported["cost"] == {"amount": "0.03000000", "currency": "USD", "priced_rounds": 1,
                                "unpriced_rounds": 1, "complete": False}
    assert [r["cost"] for r in exported["rounds"]] == ["0.03000000", None]
    assert exported["rounds"][1]["cost_note"] == "no price for reasoning"
    otel = json.loads(pages["otel"])
    keys = {a["key"] for span in otel["resourceSpans"][0]["scopeSpans"][0]["spans"] for a in span["attributes"]}
    assert {"clearloop.run.cost", "clearloop.round.cost", "clearloop.round.cost_note"} <= keys


def test_cost_by_user_sums_the_filtered_selection(cast):
    price(model="m1", input=Decimal("1"), output=Decimal("1"))
    for user, tokens in (("alice", 1_000_000), ("bob", 3_000_000)):
        store_round(make_run(cast[user]), 0, {"prompt_tokens": tokens, "completion_tokens": 0}, 1)
    auditor = Client()
    auditor.force_login(cast["otto"])
    page = auditor.get("/audit/").content.decode()
    assert page.index('data-user="bob"') < page.index('data-user="alice"')  # most expensive first
    assert "USD 3.0000" in page and "USD 1.0000" in page
    only_alice = auditor.get("/audit/?user=alice").content.decode()
    assert 'data-user="bob"' not in only_alice
    # Alice sees her own costs; nobody else's runs are on her page.
    owner = Client()
    owner.force_login(cast["alice"])
    assert owner.get("/audit/").status_code == 404
