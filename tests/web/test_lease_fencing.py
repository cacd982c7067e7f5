"""A worker whose lease was taken over (it was thought dead, or starved past its lease) can no longer
write a durable event: the chaos test once saw such a worker fail its successor's run."""

from __future__ import annotations

import pytest

from agent import events as ev
from agent.providers.types import Usage
from chatapp.models import Conversation, Message, Run, RunEvent
from chatapp.worker import store
from chatapp.worker.lease import taken_over

pytestmark = pytest.mark.django_db


def test_a_replaced_worker_cannot_write_to_the_run(cast):
    convo = Conversation.objects.create(owner=cast["alice"])
    user = Message.objects.create(conversation=convo, role="user", content="hi", payload={})
    run = Run.objects.create(
        conversation=convo,
        user_message=user,
        provider_name="demo",
        model="m",
        status="running",
        lease_owner="host:2:new/b",
    )
    finished = ev.RunFinished(text="from the old worker", usage=Usage())
    with pytest.raises(store.LeaseLost):
        store.persist_durable(run.pk, 1, "run_finished", {"text": "x"}, finished, None, "host:1:old/a")
    assert taken_over(run.pk, "host:1:old/a") and not taken_over(run.pk, "host:2:new/b")
    run.refresh_from_db()
    assert run.status == "running" and not RunEvent.objects.filter(run=run).exists()
    store.persist_durable(run.pk, 1, "run_finished", {"text": "x"}, finished, None, "host:2:new/b")
    run.refresh_from_db()
    assert run.status == "succeeded"
