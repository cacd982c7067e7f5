"""Cost through the real topology: a priced provider, a run by the worker, the cost on the pages."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from chatapp.models import Conversation, ModelPrice, Round
from chatapp.pricing import round_cost
from tests.integration.client import LiveClient, frames_until, session_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_worker_stores_each_rounds_cost_and_the_trace_shows_it(cast, demo_provider, live_stack):
    ModelPrice.objects.create(
        provider=demo_provider, model="", input=Decimal("2.5"), output=Decimal("10"),
        cached_read=Decimal("0.25"), cache_write=Decimal("3.125"), reasoning=Decimal("10"),
    )
    convo = Conversation.objects.create(owner=cast["alice"])
    client = LiveClient(live_stack.base_url, session_for(cast["alice"]))

    async def scenario():
        async with client.ws(convo.pk) as ws:
            await ws.send('{"resume": {}}')
            assert (await asyncio.to_thread(client.send, convo.pk, "What does clearloop cost?")).status_code == 200
            return await asyncio.wait_for(frames_until(ws, lambda f: f["type"] in ("run_finished", "run_failed")), 60)

    assert asyncio.run(scenario())[-1]["type"] == "run_finished"
    rounds = list(Round.objects.filter(run__conversation=convo))
    assert rounds and all(r.cost is not None and r.cost > 0 for r in rounds)
    price = ModelPrice.objects.get(provider=demo_provider)
    assert [r.cost for r in rounds] == [round_cost(r.usage, price).amount for r in rounds]
    page = client.http.get(f"/c/{convo.pk}/").text
    assert f"USD {rounds[0].cost.quantize(Decimal('0.000001'))}" in page or f"USD {rounds[0].cost.quantize(Decimal('0.0001'))}" in page
    assert 'data-role="conversation-cost">USD' in page
