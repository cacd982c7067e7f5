"""``quotas.any_enabled`` (asked on every send and between a run's rounds) is one statement written
out; its answer equals the ORM's over no quota, a disabled one and an enabled one."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatapp.models import Quota
from chatapp.services.quotas import any_enabled

pytestmark = pytest.mark.django_db


def _orm() -> bool:
    return Quota.objects.filter(enabled=True).exists()


def test_the_answer_equals_the_orms_in_one_statement(cast):
    assert any_enabled() is False is _orm()
    off = Quota.objects.create(user=cast["alice"], tokens_per_day=100, enabled=False)
    assert any_enabled() is False is _orm()
    Quota.objects.create(user=cast["bob"], tokens_per_day=100)
    with CaptureQueriesContext(connection) as queries:
        answer = any_enabled()
    assert answer is True is _orm()
    assert len(queries) == 1
    off.delete()
    assert any_enabled() is True is _orm()
