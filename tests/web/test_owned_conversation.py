"""The conversation a write names is read with one SQL statement written out on PostgreSQL
(chatapp/owned_conversation.py): the same row and related rows as the ORM's query, the same answer to
whether the writer audits, nothing for another owner's or a deleted conversation."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chatapp.models import Conversation, ProviderConfig
from chatapp.owned_conversation import _through_orm, read

pytestmark = pytest.mark.django_db


def _both(user, conversation_id, related=("provider",), asking=True):
    group = "auditors" if asking else None
    ours = read(user.pk, conversation_id, related, group)
    return ours, _through_orm(user.pk, conversation_id, related, group)


def _values(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def test_the_row_its_provider_and_the_answer_equal_the_orms(cast):
    provider = ProviderConfig.objects.create(
        name="p",
        kind="openai_chat",
        base_url="http://127.0.0.1:9/v1",
        model="m",
        extra_headers={"X-Team": "a"},
        extra_body={"top_k": 3},
    )
    convo = Conversation.objects.create(
        owner=cast["alice"],
        title="标题",
        provider=provider,
        model_override="m2",
        tool_settings={"read_file": {"enabled": False}},
        attached_context=[{"server": "docs", "uri": "file:///a", "text": "x"}],
    )
    (ours, audits), (orm, orm_audits) = _both(cast["alice"], convo.pk)
    assert _values(ours) == _values(orm) and audits is orm_audits is False
    with CaptureQueriesContext(connection) as queries:
        assert _values(ours.provider) == _values(orm.provider)
    assert not queries.captured_queries  # read with it


def test_a_conversation_without_a_provider_and_an_auditing_owner(cast):
    Group.objects.get(name="auditors").user_set.add(cast["alice"])
    convo = Conversation.objects.create(owner=cast["alice"])
    (ours, audits), (orm, orm_audits) = _both(cast["alice"], convo.pk)
    assert ours.provider is None and orm.provider is None
    assert audits is orm_audits is True
    (plain, unknown), _ = _both(cast["alice"], convo.pk, related=(), asking=False)
    assert _values(plain) == _values(orm) and unknown is None


def test_another_owners_or_a_deleted_conversation_is_not_found(cast):
    convo = Conversation.objects.create(owner=cast["alice"])
    assert _both(cast["bob"], convo.pk) == ((None, None), (None, None))
    Conversation.objects.filter(pk=convo.pk).update(deleted_at=timezone.now())
    assert _both(cast["alice"], convo.pk) == ((None, None), (None, None))
