"""Issue 13 item 3: quotas and budgets per user and group, checked before a run starts, shown to the
user and to admins, nonsense refused in the admin (the mid-run stop is in tests/integration)."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.test import Client

from chatapp.models import Conversation, ModelPrice, ProviderConfig, Quota, Round, Run
from chatapp.services.limits import LimitReached
from chatapp.services.quotas import BudgetExceeded, shown_to_user, usage_report
from chatapp.services.runs import start_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def provider(db):
    return ProviderConfig.objects.create(name="p", base_url="http://127.0.0.1:9/v1", model="m")


def spend(user, provider, tokens: int, cost: str | None = None) -> Run:
    convo = Conversation.objects.create(owner=user, provider=provider)
    run = Run.objects.create(conversation=convo, provider_name="p", model="m", status="succeeded")
    Round.objects.create(
        run=run, index=0, provider_name="p", model="m", finish_reason="stop",
        usage={"prompt_tokens": tokens - tokens // 4, "completion_tokens": tokens // 4},
        cost=Decimal(cost) if cost is not None else None,
    )
    return run


def test_a_daily_token_budget_stops_the_next_run_with_the_reason(cast, provider):
    Quota.objects.create(user=cast["alice"], tokens_per_day=1000)
    spend(cast["alice"], provider, 340)
    assert shown_to_user(cast["alice"]) == ["34 % of today's token budget used (340 tokens of 1,000 tokens)"]
    convo = Conversation.objects.create(owner=cast["alice"], provider=provider)
    start_run(convo, "fine")  # 340 < 1000
    spend(cast["alice"], provider, 700)
    with pytest.raises(BudgetExceeded, match=r"The daily token budget is used up: 1,040 tokens today, "
                                             r"the limit is 1,000 tokens \(your quota\)\. It resets at midnight"):
        start_run(Conversation.objects.create(owner=cast["alice"], provider=provider), "too much")
    # Bob has no quota and is not affected.
    start_run(Conversation.objects.create(owner=cast["bob"], provider=provider), "hello")


def test_the_browser_shows_the_budget_and_refuses_with_429(cast, provider):
    Quota.objects.create(user=cast["alice"], tokens_per_month=500)
    convo = Conversation.objects.create(owner=cast["alice"], provider=provider)
    client = Client()
    client.force_login(cast["alice"])
    spend(cast["alice"], provider, 100)
    page = client.get(f"/c/{convo.pk}/").content.decode()
    assert "20 % of this month&#x27;s token budget used" in page
    spend(cast["alice"], provider, 400)
    refused = client.post(f"/c/{convo.pk}/send/", {"message": "hi"}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 429 and "monthly token budget is used up" in refused.content.decode()
    assert not Run.objects.filter(conversation=convo).exists()


def test_cost_budget_from_the_price_table(cast, provider):
    ModelPrice.objects.create(provider=provider, model="m", input=Decimal("1"), output=Decimal("2"))
    Quota.objects.create(user=cast["alice"], cost_per_day=Decimal("0.50"))
    spend(cast["alice"], provider, 10, cost="0.20")
    spend(cast["alice"], provider, 10, cost=None)  # unpriced: counts no cost
    assert "40 % of today's cost budget used" in shown_to_user(cast["alice"])[0]
    spend(cast["alice"], provider, 10, cost="0.30")
    with pytest.raises(BudgetExceeded, match="daily cost budget is used up"):
        start_run(Conversation.objects.create(owner=cast["alice"], provider=provider), "x")


def test_group_quota_each_member_or_together(cast, provider):
    team = Group.objects.create(name="team")
    team.user_set.add(cast["alice"], cast["bob"])
    quota = Quota.objects.create(group=team, tokens_per_day=500)
    spend(cast["alice"], provider, 600)
    spend(cast["bob"], provider, 600)
    with pytest.raises(BudgetExceeded, match=r"group team \(each member\)"):
        start_run(Conversation.objects.create(owner=cast["alice"], provider=provider), "600 >= 500")
    quota.tokens_per_day = 1000
    quota.save()
    start_run(Conversation.objects.create(owner=cast["alice"], provider=provider), "each member: 600 < 1000")
    quota.shared = True
    quota.save()
    with pytest.raises(BudgetExceeded, match=r"group team \(together\)"):
        start_run(Conversation.objects.create(owner=cast["bob"], provider=provider), "together: 1200 >= 1000")
    # The strictest quota wins: a personal one on top of the group's.
    quota.enabled = False
    quota.save()
    Quota.objects.create(user=cast["bob"], tokens_per_day=100)
    with pytest.raises(BudgetExceeded, match="your quota"):
        start_run(Conversation.objects.create(owner=cast["bob"], provider=provider), "x")


def test_concurrent_runs_and_messages_per_minute(cast, provider):
    Quota.objects.create(user=cast["alice"], max_concurrent_runs=1)
    start_run(Conversation.objects.create(owner=cast["alice"], provider=provider), "one")
    with pytest.raises(LimitReached, match="your quota allows 1 at once"):
        start_run(Conversation.objects.create(owner=cast["alice"], provider=provider), "two")
    Run.objects.update(status="succeeded")
    quota = Quota.objects.get()
    quota.max_concurrent_runs, quota.messages_per_minute = None, 2
    quota.save()
    start_run(Conversation.objects.create(owner=cast["alice"], provider=provider), "two")
    Run.objects.update(status="succeeded")
    with pytest.raises(LimitReached, match="2 messages in the last minute; your quota allows 2"):
        start_run(Conversation.objects.create(owner=cast["alice"], provider=provider), "three")


@pytest.mark.parametrize(
    "fields, field, reason",
    [
        ({"tokens_per_day": 10, "tokens_per_month": 5}, "tokens_per_day", "above the monthly"),
        ({"cost_per_day": Decimal("-1")}, "cost_per_day", "greater than or equal to 0"),
        ({"cost_per_month": Decimal("5")}, "cost_per_day", "no prices in the price table"),
        ({}, "tokens_per_day", "at least one limit"),
        ({"tokens_per_day": 10, "shared": True}, "shared", "Only a group"),
        ({"max_concurrent_runs": 0}, "max_concurrent_runs", "greater than or equal to 1"),
    ],
)
def test_nonsense_quotas_are_refused_with_the_reason(cast, fields, field, reason):
    quota = Quota(user=cast["alice"], **fields)
    with pytest.raises(ValidationError) as refused:
        quota.full_clean()
    assert reason in " ".join(refused.value.message_dict.get(field, [])), refused.value.message_dict


def test_admin_form_refuses_and_shows_why(cast):
    client = Client()
    client.force_login(cast["ada"])
    answer = client.post("/admin/chatapp/quota/add/", {
        "user": cast["alice"].pk, "enabled": "on", "cost_per_day": "3", "tokens_per_day": "",
    })
    assert answer.status_code == 200 and "no prices in the price table" in answer.content.decode()
    assert not Quota.objects.exists()
    both = client.post("/admin/chatapp/quota/add/", {
        "user": cast["alice"].pk, "group": Group.objects.create(name="g").pk, "enabled": "on", "tokens_per_day": "5",
    })
    assert "either a user or a group" in both.content.decode() and not Quota.objects.exists()
    ok = client.post("/admin/chatapp/quota/add/", {"user": cast["alice"].pk, "enabled": "on", "tokens_per_day": "5"})
    assert ok.status_code == 302 and Quota.objects.get().tokens_per_day == 5


def test_usage_report_and_csv(cast, provider):
    team = Group.objects.create(name="=team")
    team.user_set.add(cast["alice"], cast["bob"])
    spend(cast["alice"], provider, 100, cost="0.1")
    spend(cast["bob"], provider, 50)
    rows = {(r.kind, r.name): r for r in usage_report()}
    assert rows[("user", "alice")].tokens_today == 100 and rows[("user", "alice")].cost_month == Decimal("0.1")
    assert rows[("group", "=team")].tokens_month == 150 and rows[("group", "=team")].unpriced_rounds_month == 1
    client = Client()
    client.force_login(cast["ada"])
    page = client.get("/admin/chatapp/quota/usage/")
    assert page.status_code == 200 and 'data-name="alice"' in page.content.decode()
    exported = client.get("/admin/chatapp/quota/usage/?format=csv")
    table = list(csv.reader(io.StringIO(exported.content.decode())))
    assert table[0][:4] == ["kind", "name", "members", "tokens_today"]
    assert ["group", "'=team", "2", "150"] == table[[r[1] for r in table].index("'=team")][:4]  # no formula
    outsider = Client()
    outsider.force_login(cast["alice"])
    assert outsider.get("/admin/chatapp/quota/usage/").status_code == 302  # not staff: to the login


def test_between_rounds_no_quota_costs_one_query_and_a_used_up_one_still_stops(
    cast, provider, django_assert_num_queries
):
    """The worker asks ``stop_reason`` before every round; most deployments set no quota, so that
    is one EXISTS, not a read of the run with its conversation and owner (docs/performance.md,
    session 9). With a quota the answer is unchanged."""
    from chatapp.services.quotas import stop_reason

    run = spend(cast["alice"], provider, 900)
    with django_assert_num_queries(1):
        assert stop_reason(run.pk) is None
    Quota.objects.create(user=cast["bob"], tokens_per_day=10)  # someone else's: alice goes on
    assert stop_reason(run.pk) is None
    Quota.objects.create(user=cast["alice"], tokens_per_day=500)
    assert stop_reason(run.pk).startswith("The daily token budget is used up: 900 tokens today")
