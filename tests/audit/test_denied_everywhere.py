"""A run whose tool call was refused ends in its own state, ``denied``, and every surface reads that
state: the chat, the audit list (and its status filter), the audit run page, the REST API and the
Django admin. Runs finished before the state existed are relabelled by migration 0020."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from chatapp.models import Run, ToolCall
from chatapp.services import api_keys
from tests.audit.conftest import make_run

pytestmark = pytest.mark.django_db
SMS = (("send_message", '{"to": "1"}', "not sent"),)


def _row(page: str, text: str) -> str:
    return next(r for r in page.split("<tr") if text in r)


@pytest.fixture
def denied(cast):
    run = make_run(cast["alice"], text="send a text", status="denied", tools=SMS)
    ToolCall.objects.filter(run=run).update(status="denied", error_code="denied")
    return run


def test_every_surface_shows_the_denied_state(cast, client_for, denied):
    plain = make_run(cast["alice"], text="plain question")
    audit = client_for("otto").get("/audit/").content.decode()
    assert 'class="status-denied"' in _row(audit, "send a text") and "Succeeded" not in _row(audit, "send a text")
    assert ">Succeeded<" in _row(audit, "plain question")
    only_denied = client_for("otto").get("/audit/?status=denied").content.decode()
    assert "send a text" in only_denied and "plain question" not in only_denied
    assert "send a text" not in client_for("otto").get("/audit/?status=succeeded").content.decode()
    detail = client_for("otto").get(f"/audit/runs/{denied.pk}/").content.decode()
    assert 'status-denied">Denied<' in detail
    chat = client_for("alice").get(f"/c/{denied.conversation_id}/").content.decode()
    badge = chat.split('data-role="status"')[0].rsplit("<span", 1)[1] + chat.split('data-role="status"')[1][:80]
    assert "status-denied" in badge and "Denied" in badge and "Succeeded" not in badge
    key = api_keys.create_key(cast["alice"], "laptop", "chat")
    api = client_for("alice").get(f"/api/runs/{denied.pk}", HTTP_AUTHORIZATION=f"Bearer {key.secret}")
    assert api.status_code == 200 and api.json()["status"] == "denied"
    admin = client_for("ada").get("/admin/chatapp/run/?status__exact=denied").content.decode()
    # By the rows' change links: a bare ">12<" also matches a token count of 12.
    assert f"/admin/chatapp/run/{denied.pk}/change/" in admin and "Denied" in admin
    assert f"/admin/chatapp/run/{plain.pk}/change/" not in admin


def test_migration_0020_relabels_runs_that_finished_with_a_refused_call(cast):
    refused = make_run(cast["alice"], text="refused", tools=SMS)
    ToolCall.objects.filter(run=refused).update(status="denied", error_code="denied")
    closed = make_run(cast["alice"], text="stopped while waiting", tools=SMS)
    ToolCall.objects.filter(run=closed).update(status="denied", error_code="run_ended")
    plain = make_run(cast["alice"], text="plain")
    module = importlib.import_module("chatapp.migrations.0020_run_denied")
    module.relabel_denied(apps, None)
    statuses = dict(Run.objects.values_list("pk", "status"))
    assert (statuses[refused.pk], statuses[closed.pk], statuses[plain.pk]) == ("denied", "succeeded", "succeeded")
