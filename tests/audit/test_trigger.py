"""PostgreSQL refuses UPDATE and DELETE on the audit table; an edit made around it is still caught."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction

from chatapp.audit import record
from chatapp.models import AuditEvent
from tests.audit.conftest import needs_postgres

pytestmark = [pytest.mark.django_db, needs_postgres]


@pytest.fixture
def rows():
    return [record("export", actor="otto", payload={"n": i}) for i in range(3)]


def test_an_orm_update_is_refused(rows):
    with pytest.raises(DatabaseError, match="append-only: UPDATE refused"), transaction.atomic():
        AuditEvent.objects.filter(seq=2).update(actor="mallory")
    assert AuditEvent.objects.get(seq=2).actor == "otto"


def test_saving_a_changed_row_is_refused(rows):
    rows[0].payload = {"n": 42}
    with pytest.raises(DatabaseError, match="UPDATE refused"), transaction.atomic():
        rows[0].save()


@pytest.mark.parametrize("how", ["queryset", "instance", "sql"])
def test_a_delete_is_refused(rows, how):
    with pytest.raises(DatabaseError, match="DELETE refused"), transaction.atomic():
        if how == "queryset":
            AuditEvent.objects.all().delete()
        elif how == "instance":
            rows[1].delete()
        else:
            with connection.cursor() as cursor:
                cursor.execute("DELETE FROM chatapp_auditevent WHERE seq = 3")
    assert AuditEvent.objects.count() == 3


def test_an_edit_by_a_superuser_who_disabled_the_trigger_is_named(rows):
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE chatapp_auditevent DISABLE TRIGGER chatapp_auditevent_append_only")
        cursor.execute("""UPDATE chatapp_auditevent SET payload = '{"n": 7}' WHERE seq = 2""")
        cursor.execute("ALTER TABLE chatapp_auditevent ENABLE TRIGGER chatapp_auditevent_append_only")
    with pytest.raises(CommandError, match=r"BROKEN at seq 2: payload edited \(hash mismatch\)") as info:
        call_command("verify_audit")
    assert info.value.returncode == 1
    with pytest.raises(DatabaseError), transaction.atomic():  # and the trigger is back on
        AuditEvent.objects.filter(seq=2).update(payload={"n": 1})
