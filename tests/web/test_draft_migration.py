"""Migration 0030 marks the empty conversations of before as drafts: the home page handed out any
empty conversation as the user's draft, so nobody's draft changes on upgrade, and a conversation with
a message or a file is never one."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE, AFTER = ("chatapp", "0029_workerbeat_holding"), ("chatapp", "0030_conversation_draft")


def migrate(target: tuple[str, str]):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])
    return executor.loader.project_state([target]).apps


def test_empty_conversations_become_drafts_and_the_rest_do_not():
    old = migrate(BEFORE)
    try:
        user = old.get_model("auth", "User").objects.create(username="upgrader")
        Conversation = old.get_model("chatapp", "Conversation")
        empty = Conversation.objects.create(owner=user, title="New conversation")
        talked = Conversation.objects.create(owner=user, title="talked")
        old.get_model("chatapp", "Message").objects.create(
            conversation=talked, role="user", content="hi", payload={}
        )
        filed = Conversation.objects.create(owner=user, title="filed")
        old.get_model("chatapp", "Upload").objects.create(
            conversation=filed, uploaded_by=user, name="a.txt", size=1, sha256="0" * 64
        )
        new = migrate(AFTER)
        drafts = set(
            new.get_model("chatapp", "Conversation").objects.filter(draft=True).values_list("pk", flat=True)
        )
        assert drafts == {empty.pk}
    finally:
        migrate(("chatapp", max_migration()))


def max_migration() -> str:
    executor = MigrationExecutor(connection)
    return max(name for app, name in executor.loader.graph.leaf_nodes() if app == "chatapp")
