"""A run whose worker died while it ran (its lease lapsed) is picked up by a live worker's sweep,
without waiting for a worker restart or for Redis's visibility timeout."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from chatapp.models import Conversation, Message, Run

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_running_run_with_a_lapsed_lease_is_resumed(cast, demo_provider, live_stack, settings):
    convo = Conversation.objects.create(owner=cast["alice"])
    message = Message.objects.create(
        conversation=convo,
        role="user",
        content="are you still there?",
        payload={"role": "user", "content": "are you still there?"},
    )
    long_ago = timezone.now() - timedelta(minutes=10)
    # As a killed worker leaves it: running, leased by a process that no longer renews, no task queued.
    run = Run.objects.create(
        conversation=convo,
        user_message=message,
        provider_name="demo",
        model="clearloop-demo",
        status="running",
        deliveries=1,
        lease_owner="dead-host:1:abc",
        lease_expires_at=long_ago,
        started_at=long_ago,
    )
    Run.objects.filter(pk=run.pk).update(created_at=long_ago)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status == "succeeded":
            break
        time.sleep(0.2)  # polling the database for a state reached by another process
    assert run.status == "succeeded" and "are you still there?" in run.final_text
    # Every worker sharing this database sweeps (other test stacks too): whichever took the run, the
    # lease let exactly one of them answer it.
    assert run.deliveries >= 2
    assert run.events.filter(type="round_finished").count() == 1
    assert run.events.filter(type="run_finished").count() == 1
