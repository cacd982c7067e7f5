"""The fixed cast of every web test: Alice owns things, Bob has no access, Ada is an admin, Otto audits."""

from __future__ import annotations

import pytest


@pytest.fixture
def cast(db):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    users = get_user_model()
    alice = users.objects.create_user("alice", password="alice-pass")
    bob = users.objects.create_user("bob", password="bob-pass")
    ada = users.objects.create_superuser("ada", password="ada-pass")
    otto = users.objects.create_user("otto", password="otto-pass")
    Group.objects.get_or_create(name="auditors")[0].user_set.add(otto)
    return {"alice": alice, "bob": bob, "ada": ada, "otto": otto}
