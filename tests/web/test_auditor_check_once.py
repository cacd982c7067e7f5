"""``access.is_auditor`` asks the database once per request's user object (it was asked twice in every
send), and a login that changes the user's roles (SSO) asks again."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatapp.access import AUDITORS, is_auditor
from chatapp.sso import apply_roles

pytestmark = pytest.mark.django_db


def test_one_query_per_user_object_and_asked_again_after_roles_change(cast):
    bob = cast["bob"]
    with CaptureQueriesContext(connection) as queries:
        assert not is_auditor(bob)
        assert not is_auditor(bob)
    assert len(queries) == 1
    apply_roles(bob, {"auditors"})
    assert Group.objects.get(name=AUDITORS).user_set.filter(pk=bob.pk).exists()
    assert is_auditor(bob)
