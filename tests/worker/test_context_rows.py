"""A run's context is read with statements written out on PostgreSQL (chatapp/worker/context_rows.py):
each gives what the ORM's query gives, and the context built from them is the one the ORM built."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatapp.models import Conversation, Message, ProviderConfig, Run
from chatapp.worker import context_rows
from chatapp.worker.context import history

pytestmark = pytest.mark.django_db


def _values(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


@pytest.fixture
def branch(cast):
    ProviderConfig.objects.create(
        name="p", kind="openai_chat", base_url="http://127.0.0.1:9/v1", model="m", extra_body={"top_k": 3}
    )
    convo = Conversation.objects.create(
        owner=cast["alice"], tool_settings={"write_file": {"enabled": False}}, attached_context=[]
    )
    first_q = Message.objects.create(
        conversation=convo,
        role="user",
        content="问 " * 4000,
        payload={"role": "user", "content": "问 " * 4000},
    )
    first = Run.objects.create(
        conversation=convo, user_message=first_q, provider_name="p", model="m", status="succeeded"
    )
    Message.objects.filter(pk=first_q.pk).update(run=first)
    Message.objects.create(
        conversation=convo,
        run=first,
        role="assistant",
        content="答",
        payload={"role": "assistant", "content": "答"},
    )
    second_q = Message.objects.create(
        conversation=convo,
        role="user",
        content="again",
        payload={"role": "user", "content": "again"},
        parent_run=first,
    )
    second = Run.objects.create(conversation=convo, user_message=second_q, provider_name="p", model="m")
    Message.objects.filter(pk=second_q.pk).update(run=second)
    return second


def test_each_read_equals_the_orms(branch):
    run = context_rows.run_with_conversation(branch.pk)
    orm = Run.objects.select_related("conversation").get(pk=branch.pk)
    assert _values(run) == _values(orm)
    with CaptureQueriesContext(connection) as queries:
        assert _values(run.conversation) == _values(orm.conversation)
    assert not queries.captured_queries
    assert _values(context_rows.provider_named("p")) == _values(ProviderConfig.objects.get(name="p"))
    links, questions = context_rows.branch_links(run.conversation_id)
    assert links == {
        pk: (role, r, parent)
        for pk, role, r, parent in Message.objects.filter(conversation_id=run.conversation_id).values_list(
            "id", "role", "run_id", "parent_run_id"
        )
    }
    assert questions == dict(
        Run.objects.filter(conversation_id=run.conversation_id).values_list("id", "user_message_id")
    )
    ids = list(links)
    ours, theirs = context_rows.messages_by_id(ids), Message.objects.in_bulk(ids)
    assert {k: _values(v) for k, v in ours.items()} == {k: _values(v) for k, v in theirs.items()}
    assert context_rows.messages_by_id([]) == {}


def test_the_history_is_the_branch(branch):
    texts = [m.content for m in history(context_rows.run_with_conversation(branch.pk))][1:]
    assert texts == ["问 " * 4000, "答", "again"]  # the long question unpacked from its blob


def test_missing_rows_are_the_orms_errors(branch):
    with pytest.raises(Run.DoesNotExist):
        context_rows.run_with_conversation(branch.pk + 1000)
    with pytest.raises(ProviderConfig.DoesNotExist):
        context_rows.provider_named("nobody")
