"""Issue 13 item 3 through the real worker: a run that crosses its budget mid-way finishes its round
(the tool call runs and is stored) and stops before the next model request, with the reason."""

from __future__ import annotations

import pytest

from chatapp.models import Conversation, Quota, Round, Run, ToolCall
from chatapp.services.runs import start_run
from tests.durable.harness import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_budget_crossed_mid_run_stops_after_the_round(demo_tools, live_stack, cast):
    Quota.objects.create(user=cast["alice"], tokens_per_day=50)
    convo = Conversation.objects.create(owner=cast["alice"], provider=demo_tools)
    run = start_run(convo, 'Read it: [[demo:call read_file {"path": "config.yaml"}]]')
    wait_until(lambda: Run.objects.get(pk=run.pk).status in ("succeeded", "failed", "cancelled", "denied"), 60, "the run ends")
    run.refresh_from_db()
    assert run.status == "failed" and run.error_class == "BudgetExceeded", (run.status, run.error)
    assert "The daily token budget is used up" in run.error and "the limit is 50 tokens" in run.error
    assert Round.objects.filter(run=run).count() == 1  # the second request was never sent
    assert ToolCall.objects.get(run=run).status == "succeeded"  # the round was finished
    # And the next message is refused before it starts.
    from chatapp.services.quotas import BudgetExceeded

    with pytest.raises(BudgetExceeded):
        start_run(convo, "again")
