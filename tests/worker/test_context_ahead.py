"""A first delivery's context is read while its lease is taken (worker/context.py
``load_context_ahead``, tasks.execute_run): what it reads is what the driver would read after the
lease, and it is used only when the lease was that first delivery."""

from __future__ import annotations

import pytest

from chatapp.models import Conversation, Message, Run
from chatapp.worker.context import load_context_ahead, load_run_context
from chatapp.worker.lease import release_lease, take_lease

pytestmark = pytest.mark.django_db


def _queued(cast, demo_provider, text="hello there") -> Run:
    # The rows start_run writes, without its enqueue: no worker of another test may take this run.
    convo = Conversation.objects.create(owner=cast["alice"], provider=demo_provider)
    message = Message.objects.create(
        conversation=convo, role=Message.Role.USER, content=text, payload={"role": "user", "content": text}
    )
    run = Run.objects.create(
        conversation=convo, user_message=message, provider_name=demo_provider.name, model=demo_provider.model
    )
    message.run = run
    message.save(update_fields=["run"])
    return run


def test_read_ahead_equals_what_the_first_delivery_reads_after_its_lease(cast, demo_provider):
    run = _queued(cast, demo_provider)
    ahead = load_context_ahead(run.pk)
    taken = take_lease(run.pk)
    after = load_run_context(run.pk)
    assert taken.first and ahead is not None
    assert ahead.last_seq == after.last_seq == 1  # the lease's "running" frame
    assert [m.content for m in ahead.state.messages] == [m.content for m in after.state.messages]
    assert ahead.state.messages[-1].content == "hello there"
    assert (ahead.provider_settings, ahead.limits, ahead.workspace, ahead.owner_id) == (
        after.provider_settings,
        after.limits,
        after.workspace,
        after.owner_id,
    )


def test_no_read_ahead_for_a_run_that_was_delivered_before(cast, demo_provider):
    run = _queued(cast, demo_provider)
    first = take_lease(run.pk)
    release_lease(run.pk, first.owner)
    Run.objects.filter(pk=run.pk).update(status="queued", lease_owner="", lease_expires_at=None)
    # Queued again (say, after an approval): something is stored, the driver must rebuild from it.
    assert load_context_ahead(run.pk) is None
    again = take_lease(run.pk)
    assert not again.first


def test_a_run_not_queued_is_not_read_ahead(cast, demo_provider):
    run = _queued(cast, demo_provider)
    take_lease(run.pk)
    assert load_context_ahead(run.pk) is None
