"""The send stores its message and its run with one plain INSERT each (chatapp/row_insert.py): the
rows stored are the ones the ORM's ``create`` stores (defaults, the creation time, a long payload),
the objects come back with their ids, and a refused row is Django's IntegrityError as before."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from chatapp.models import Conversation, Message, Run
from chatapp.row_insert import insert_row

pytestmark = pytest.mark.django_db
LONG = {"role": "user", "content": "长文本 " * 20_000, "media": [{"kind": "image", "data": "QUJD" * 500}]}


def _row(model, pk) -> dict:
    """The stored row as the ORM reads it, without what differs between two inserts by design."""
    row = model.objects.filter(pk=pk).values().get()
    return {
        k: v for k, v in row.items() if k not in ("id", "created_at", "conversation_id", "user_message_id")
    }


def test_a_message_and_a_run_are_stored_as_the_orm_stores_them(cast):
    convos = [Conversation.objects.create(owner=cast["alice"]) for _ in range(2)]
    ours = Message(conversation=convos[0], role=Message.Role.USER, content="你好", payload=LONG)
    with CaptureQueriesContext(connection) as queries:
        insert_row(ours)
    theirs = Message.objects.create(
        conversation=convos[1], role=Message.Role.USER, content="你好", payload=LONG
    )
    inserts = [
        q["sql"] for q in queries.captured_queries if q["sql"].startswith('INSERT INTO "chatapp_message"')
    ]
    assert len(inserts) == 1 and ours.pk and ours.pk != theirs.pk  # (and the long payload's blob)
    assert _row(Message, ours.pk) == _row(Message, theirs.pk)
    assert Message.objects.get(pk=ours.pk).payload == LONG  # the long payload read back whole
    assert ours.created_at is not None and not ours._state.adding

    our_run = Run(conversation=convos[0], user_message=ours, provider_name="demo", model="m")
    insert_row(our_run)
    their_run = Run.objects.create(
        conversation=convos[1], user_message=theirs, provider_name="demo", model="m"
    )
    assert _row(Run, our_run.pk) == _row(Run, their_run.pk)
    stored = Run.objects.get(pk=our_run.pk)
    assert (stored.status, stored.deliveries, stored.user_message_id) == (Run.Status.QUEUED, 0, ours.pk)
    assert stored.created_at == our_run.created_at


def test_a_refused_row_is_djangos_integrity_error_and_stores_nothing(cast):
    convo = Conversation.objects.create(owner=cast["alice"])
    insert_row(Run(conversation=convo, provider_name="demo", model="m"))
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_row(
            Run(conversation=convo, provider_name="demo", model="m")
        )  # one active run per conversation
    assert Run.objects.filter(conversation=convo).count() == 1


def test_a_model_without_a_generated_id_is_refused():
    from django.contrib.sessions.models import Session

    with pytest.raises(ValueError, match="database-generated id"):
        insert_row(Session(session_key="k" * 40, session_data=""))
