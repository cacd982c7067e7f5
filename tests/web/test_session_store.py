"""The session read every signed-in request makes is one statement written out on PostgreSQL
(chatapp/session_store.py): every state of a session loads as Django's own database engine loads it,
and a signed-in page still knows its user."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.sessions.backends import db
from django.contrib.sessions.models import Session
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chatapp.session_store import SessionStore

pytestmark = pytest.mark.django_db


def _both(key: str | None) -> tuple[tuple[dict, str | None], tuple[dict, str | None]]:
    ours, django = SessionStore(key), db.SessionStore(key)
    return (ours.load(), ours.session_key), (django.load(), django.session_key)


def _stored(data: dict, expires_in: timedelta = timedelta(days=1)) -> str:
    store = db.SessionStore()
    store.update(data)
    store.create()
    Session.objects.filter(pk=store.session_key).update(expire_date=timezone.now() + expires_in)
    return store.session_key


def test_the_app_uses_it():
    assert settings.SESSION_ENGINE == "chatapp.session_store"


def test_a_live_session_loads_as_djangos_in_one_statement():
    key = _stored({"_auth_user_id": "7", "lang": "zh-hans", "nested": {"a": [1, "二"]}})
    with CaptureQueriesContext(connection) as queries:
        ours, django = _both(key)
    assert ours == django == ({"_auth_user_id": "7", "lang": "zh-hans", "nested": {"a": [1, "二"]}}, key)
    statements = [q["sql"] for q in queries.captured_queries if "django_session" in q["sql"]]
    assert len(statements) == 2  # ours, then Django's
    if connection.vendor == "postgresql":
        assert "$1" in statements[0] and "$1" not in statements[1]  # bound by the server, not the ORM's


@pytest.mark.parametrize(
    "state",
    ["expired", "missing", "tampered", "no key", "short key"],
)
def test_a_session_that_cannot_be_used_loads_empty_and_forgets_its_key_as_djangos(state):
    key: str | None = _stored(
        {"_auth_user_id": "7"}, timedelta(seconds=-1) if state == "expired" else timedelta(days=1)
    )
    if state == "missing":
        Session.objects.filter(pk=key).delete()
    elif state == "tampered":
        Session.objects.filter(pk=key).update(session_data="not-signed:x")
    elif state == "no key":
        key = None
    elif state == "short key":
        key = "abc"
    ours, django = _both(key)
    assert ours == django
    assert ours[0] == {}
    if state != "tampered":  # Django keeps the key of a row it could read but not decode
        assert ours[1] is None


@pytest.mark.django_db(transaction=True)  # read from another thread than the one that stored it
async def test_the_async_read_is_the_same():
    from asgiref.sync import sync_to_async

    key = await sync_to_async(_stored)({"_auth_user_id": "9"})
    ours = SessionStore(key)
    assert await ours.aload() == {"_auth_user_id": "9"}
    assert ours.session_key == key


def test_a_signed_in_page_knows_its_user_and_a_signed_out_one_does_not(client, django_user_model):
    user = django_user_model.objects.create_user("sessions-reader", password="pw-1234567")
    client.force_login(user)
    page = client.get("/", follow=True)
    assert page.wsgi_request.user == user
    client.logout()
    page = client.get("/", follow=True)
    assert not page.wsgi_request.user.is_authenticated
