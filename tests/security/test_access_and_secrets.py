"""Issue 16 M1, L13, M8, M10 reproduced at the web/admin/CLI boundary (the live-stack ones are in
test_hostile_stack.py)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client

from chatapp.access import can_view_conversation
from chatapp.models import Approval, McpServer, ProviderConfig, ToolCall
from chatapp.redaction import REDACTED, redact_text
from chatapp.secrets import encrypt, provider_key
from tests.audit.conftest import make_run

pytestmark = pytest.mark.django_db

CANARY_ENV = "CANARYENV-4d5e6f7a8b"
CANARY_HDR = "CANARYHDR-9q8w7e6r"


@pytest.fixture
def staffer(db):
    return get_user_model().objects.create_user("staffer", is_staff=True)


def _client(user):
    client = Client()
    client.force_login(user)
    return client


def test_m1_staff_without_a_permission_reads_nobodys_conversation(cast, staffer):
    run = make_run(cast["alice"], text="private")
    client = _client(staffer)
    assert client.get(f"/api/runs/{run.pk}/trace").status_code == 404
    assert client.get(f"/runs/{run.pk}/fragment/").status_code == 404
    assert not can_view_conversation(staffer, run.conversation)  # the websocket consumer asks the same
    # The explicit grants still work: the named permission, the auditors' group.
    staffer.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    staffer = get_user_model().objects.get(pk=staffer.pk)
    assert _client(staffer).get(f"/api/runs/{run.pk}/trace").status_code == 200
    assert _client(cast["otto"]).get(f"/api/runs/{run.pk}/trace").status_code == 200


def test_l13_cli_approval_needs_staff_as_the_readme_says(cast):
    run = make_run(cast["bob"], text="send", status="awaiting_approval")
    call = ToolCall.objects.create(run=run, round_index=1, index=0, call_id="c-l13", name="send_message",
                                   status="awaiting_approval", risk="high")
    approvers = Group.objects.get_or_create(name="approvers")[0]
    approvers.permissions.add(Permission.objects.get(codename="approve_toolcall"))
    approvers.user_set.add(cast["alice"])  # not staff
    with pytest.raises(CommandError, match="staff status"):
        call_command("approvals", "approve", str(call.pk), as_user="alice", reason="ok")
    assert not Approval.objects.filter(tool_call=call).exists()
    assert ToolCall.objects.get(pk=call.pk).status == "awaiting_approval"


def _form_data(row, **changes):
    from django.forms.models import model_to_dict

    from chatapp.admin.providers import ProviderConfigForm

    data = {k: v for k, v in model_to_dict(row).items() if v is not None}
    for name in ("extra_headers", "capability_overrides", "extra_body"):
        if name in data:
            data[name] = json.dumps(data[name])
    data.update(changes)
    return ProviderConfigForm(data=data, instance=row if row.pk else None)


def test_m8_a_provider_cannot_read_other_settings_through_its_key_variable(monkeypatch, cast):
    monkeypatch.setenv("DATABASE_URL", "postgres://user:pw@db/clearloop")
    template = ProviderConfig(name="exfil", base_url="http://127.0.0.1:9/v1", model="m")
    form = _form_data(template, api_key_env="DATABASE_URL")
    assert not form.is_valid() and "not an allowed key variable" in str(form.errors["api_key_env"])
    # Even a row written around the form never reads it.
    row = ProviderConfig.objects.create(name="exfil2", base_url="http://127.0.0.1:9/v1", model="m",
                                        api_key_env="DATABASE_URL")
    assert provider_key(row) is None
    monkeypatch.setenv("CLEARLOOP_KEY_TEAM", "team-key-123456")
    row.api_key_env = "CLEARLOOP_KEY_TEAM"
    assert provider_key(row) == "team-key-123456"


def test_m8_a_stored_key_is_not_sent_to_a_new_base_url(cast):
    row = ProviderConfig.objects.create(name="keyed", base_url="https://api.example.com/v1", model="m",
                                        api_key_encrypted=encrypt("sk-stored-0123456789abcdef"))
    same = _form_data(row, label="renamed")
    assert same.is_valid(), same.errors
    same.save()
    assert ProviderConfig.objects.get(pk=row.pk).api_key_encrypted  # kept for the same endpoint
    moved = _form_data(ProviderConfig.objects.get(pk=row.pk), base_url="http://attacker.example/v1")
    assert moved.is_valid(), moved.errors
    moved.save()
    assert ProviderConfig.objects.get(pk=row.pk).api_key_encrypted == ""


def test_m10_mcp_env_and_header_values_are_encrypted_at_rest_and_redacted_once_loaded(db):
    McpServer.objects.create(name="evil", transport="http", url="http://127.0.0.1:9/mcp",
                             env={"API_TOKEN": CANARY_ENV, "REF": "env:SOME_NAME"},
                             headers={"X-Api-Token": CANARY_HDR, "X-Team": "blue"})
    with connection.cursor() as cursor:
        cursor.execute("SELECT env, headers FROM chatapp_mcpserver WHERE name = 'evil'")
        raw = json.dumps([str(v) for v in cursor.fetchone()])
    assert CANARY_ENV not in raw and CANARY_HDR not in raw and "fernet:" in raw
    assert "env:SOME_NAME" in raw and "blue" not in raw  # every literal is encrypted; references are not
    loaded = McpServer.objects.get(name="evil")
    assert loaded.env["API_TOKEN"] == CANARY_ENV and loaded.headers["X-Team"] == "blue"
    assert redact_text(f"echo: {CANARY_ENV} {CANARY_HDR}") == f"echo: {REDACTED} {REDACTED}"
    assert redact_text("blue") == "blue"  # not secret by its name or its look


def test_m2_a_server_switched_off_in_a_conversation_is_not_read_for_it(cast):
    from chatapp.models import Conversation

    convo = Conversation.objects.create(owner=cast["alice"], tool_settings={"servers": {"hostile": False}})
    client = _client(cast["alice"])
    attach = client.post(f"/c/{convo.pk}/context/attach/", {"server": "hostile", "uri": "hostile://r1"})
    prompt = client.post(f"/c/{convo.pk}/context/prompt/", {"server": "hostile", "name": "p1"})
    assert "switched off" in attach.content.decode() and "switched off" in prompt.content.decode()
    convo.refresh_from_db()
    assert convo.attached_context == []
