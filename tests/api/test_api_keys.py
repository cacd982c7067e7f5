"""Issue 13 item 2: API keys (hashed, shown once, scoped, expiring, revocable) and the refusals of the
API's front door, through Django's test client (no worker needed)."""

from __future__ import annotations

import hashlib
import io
import json
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from chatapp.models import ApiKey, AuditEvent, Conversation
from chatapp.services import api_keys

pytestmark = pytest.mark.django_db


def bearer(secret: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}


def test_a_key_is_shown_once_and_stored_only_as_a_hash(cast):
    new = api_keys.create_key(cast["alice"], "laptop", "chat,traces")
    row = ApiKey.objects.get()
    assert new.secret.startswith(f"clk_{row.prefix}_") and len(new.secret) > 50
    assert row.key_hash == hashlib.sha256(new.secret.encode()).hexdigest()
    assert new.secret not in json.dumps(list(ApiKey.objects.values()), default=str)
    assert row.scopes == ["chat", "traces"]
    assert api_keys.authenticate(new.secret) == row
    audit = AuditEvent.objects.get(kind="api_key_created")
    assert new.secret not in json.dumps(audit.payload) and audit.payload["prefix"] == row.prefix


def test_key_page_creates_lists_and_revokes(cast):
    client = Client()
    client.force_login(cast["alice"])
    page = client.post("/keys/", {"name": "script", "scopes": ["chat"]})
    assert page.status_code == 200 and page["Cache-Control"] == "no-store"
    key = ApiKey.objects.get(user=cast["alice"])
    secret = page.content.decode().split('data-role="secret">')[1].split("<")[0]
    assert api_keys.authenticate(secret) == key
    again = client.get("/keys/").content.decode()
    assert secret not in again and f"clk_{key.prefix}_" in again  # shown once
    assert client.post(f"/keys/{key.pk}/revoke/").status_code == 302
    with pytest.raises(api_keys.InvalidKey):
        api_keys.authenticate(secret)
    # Someone else's key cannot be revoked from this page.
    other = api_keys.create_key(cast["bob"], "bob's", "chat")
    assert client.post(f"/keys/{other.key.pk}/revoke/").status_code == 404
    assert api_keys.authenticate(other.secret)


def test_bad_key_requests_are_refused_with_reasons(cast):
    for name, scopes, reason in [
        ("", "chat", "Give the key a name"),
        ("x", "chat,root", "Scopes must be some of"),
        ("x", "", "Scopes must be some of"),
        ("x", "approve", "may not approve tool calls"),  # Alice is no approver
    ]:
        with pytest.raises(api_keys.KeyRefused, match=reason):
            api_keys.create_key(cast["alice"], name, scopes)
    with pytest.raises(api_keys.KeyRefused, match="in the past"):
        api_keys.create_key(cast["alice"], "x", "chat", expires_at=timezone.now() - timedelta(days=1))
    assert not ApiKey.objects.exists()


def test_every_failed_check_gets_the_same_401(cast):
    good = api_keys.create_key(cast["alice"], "good", "chat")
    revoked = api_keys.create_key(cast["alice"], "revoked", "chat")
    api_keys.revoke_key(revoked.key, cast["ada"])
    expired = api_keys.create_key(cast["alice"], "expired", "chat", expires_at=timezone.now() + timedelta(days=1))
    ApiKey.objects.filter(pk=expired.key.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    forged = good.secret[:-4] + ("AAAA" if not good.secret.endswith("AAAA") else "BBBB")
    unknown_prefix = "clk_" + "z" * 12 + good.secret[16:]
    client = Client()
    bodies = set()
    for secret in ["nonsense", "clk_short", forged, unknown_prefix, revoked.secret, expired.secret]:
        answer = client.get("/v1/models", **bearer(secret))
        assert answer.status_code == 401, secret
        assert answer["WWW-Authenticate"].startswith("Bearer")
        bodies.add(answer.content)
    assert len(bodies) == 1  # nothing says which part was wrong
    assert json.loads(bodies.pop())["error"]["message"] == "Invalid API key."
    assert client.get("/v1/models").status_code == 401
    assert client.get("/v1/models", HTTP_AUTHORIZATION=f"Basic {good.secret}").status_code == 401
    ok = client.get("/v1/models", **bearer(good.secret))
    assert ok.status_code == 200, ok.content
    assert ApiKey.objects.get(pk=good.key.pk).last_used_at is not None


def test_a_revoked_key_is_refused_at_once(cast):
    new = api_keys.create_key(cast["alice"], "k", "chat")
    client = Client()
    assert client.get("/api/conversations", **bearer(new.secret)).status_code == 200
    api_keys.revoke_key(new.key, cast["ada"])
    assert client.get("/api/conversations", **bearer(new.secret)).status_code == 401


def test_a_key_of_a_deactivated_user_is_refused(cast):
    new = api_keys.create_key(cast["alice"], "k", "chat")
    cast["alice"].is_active = False
    cast["alice"].save()
    assert Client().get("/api/conversations", **bearer(new.secret)).status_code == 401


def test_keys_in_urls_are_refused(cast):
    new = api_keys.create_key(cast["alice"], "k", "chat")
    client = Client()
    for url in [f"/api/conversations?api_key={new.secret}", f"/api/conversations?x={new.secret}",
                "/v1/models?key=anything"]:
        answer = client.get(url, **bearer(new.secret))
        assert answer.status_code == 400, url
        assert "Authorization header" in answer.json()["error"]["message"]


def test_guessing_keys_is_rate_limited_per_address(cast, settings):
    settings.API_KEY_FAILURES_PER_MINUTE = 5
    good = api_keys.create_key(cast["alice"], "k", "chat")
    client = Client(REMOTE_ADDR="203.0.113.9")
    codes = [client.get("/v1/models", **bearer(f"clk_{'a' * 12}_{'b' * 43}")).status_code for _ in range(7)]
    assert codes[:5] == [401] * 5 and codes[5:] == [429, 429]
    limited = client.get("/v1/models", **bearer(good.secret))
    assert limited.status_code == 429 and int(limited["Retry-After"]) > 0  # even with the right key
    assert Client(REMOTE_ADDR="198.51.100.1").get("/v1/models", **bearer(good.secret)).status_code == 200


def test_scopes_are_enforced(cast, people_for_approval):
    chat_only = api_keys.create_key(people_for_approval, "c", "chat")
    approver = api_keys.create_key(people_for_approval, "a", "approve")
    client = Client()
    refused = client.get("/api/approvals", **bearer(chat_only.secret))
    assert refused.status_code == 403 and "needs approve" in refused.json()["detail"]
    assert client.get("/api/approvals", **bearer(approver.secret)).status_code == 200
    assert client.get("/v1/models", **bearer(approver.secret)).status_code == 403
    assert client.post("/api/approvals/1", data={"decision": "approve"}, content_type="application/json",
                       **bearer(chat_only.secret)).status_code == 403


def test_an_approve_key_loses_its_power_with_its_user(cast, people_for_approval):
    approver = api_keys.create_key(people_for_approval, "a", "approve")
    people_for_approval.is_staff = False
    people_for_approval.save()
    answer = Client().get("/api/approvals", **bearer(approver.secret))
    assert answer.status_code == 403 and "may not approve" in answer.json()["detail"]


@pytest.fixture
def people_for_approval(cast):
    from django.contrib.auth.models import Permission

    april = type(cast["alice"]).objects.create_user("april", is_staff=True)
    april.user_permissions.add(Permission.objects.get(codename="approve_toolcall"))
    return type(april).objects.get(pk=april.pk)


def test_manage_py_apikey_create_list_revoke(cast):
    out, err = io.StringIO(), io.StringIO()
    call_command("apikey", "create", "--user", "alice", "--name", "ops", "--scopes", "chat,traces",
                 stdout=out, stderr=err)
    secret = out.getvalue().strip()
    assert secret.startswith("clk_") and "\n" not in secret and secret not in err.getvalue()
    key = api_keys.authenticate(secret)
    assert key.scopes == ["chat", "traces"] and key.name == "ops"
    listing = io.StringIO()
    call_command("apikey", "list", "--json", stdout=listing)
    rows = json.loads(listing.getvalue())
    assert rows[0]["prefix"] == key.prefix and secret not in listing.getvalue()
    call_command("apikey", "revoke", secret[:16], "--as", "ada", stdout=io.StringIO())
    with pytest.raises(api_keys.InvalidKey):
        api_keys.authenticate(secret)
    with pytest.raises(CommandError, match="revoked already"):
        call_command("apikey", "revoke", str(key.pk), stdout=io.StringIO())
    with pytest.raises(CommandError, match="Scopes must be"):
        call_command("apikey", "create", "--user", "alice", "--name", "x", "--scopes", "admin")


def test_admin_revokes_any_key(cast):
    new = api_keys.create_key(cast["alice"], "k", "chat")
    client = Client()
    client.force_login(cast["ada"])
    listing = client.get("/admin/chatapp/apikey/")
    assert listing.status_code == 200 and new.key.prefix in listing.content.decode()
    assert new.secret not in listing.content.decode()
    client.post("/admin/chatapp/apikey/", {"action": "revoke", "_selected_action": [new.key.pk]})
    new.key.refresh_from_db()
    assert new.key.revoked_at is not None and new.key.revoked_by == cast["ada"]
    assert AuditEvent.objects.filter(kind="api_key_revoked", actor="ada").exists()


def test_openapi_schema_and_browsable_page(cast):
    client = Client()
    schema = client.get("/api/schema").json()
    paths = schema["paths"]
    for path in ["/api/conversations", "/api/conversations/{conversation_id}/messages", "/api/runs/{run_id}",
                 "/api/runs/{run_id}/trace", "/api/runs/{run_id}/events", "/api/runs/{run_id}/cancel",
                 "/api/approvals", "/api/approvals/{call_id}", "/v1/chat/completions", "/v1/models"]:
        assert path in paths, path
    assert schema["components"]["securitySchemes"]
    page = client.get("/api/docs")
    assert page.status_code == 200 and b"swagger" in page.content.lower()


def test_rest_conversations_obey_ownership(cast):
    alice = api_keys.create_key(cast["alice"], "a", "chat").secret
    bob = api_keys.create_key(cast["bob"], "b", "chat").secret
    client = Client()
    made = client.post("/api/conversations", data={"title": "mine"}, content_type="application/json",
                       **bearer(alice))
    assert made.status_code == 201
    cid = made.json()["id"]
    assert Conversation.objects.get(pk=cid).owner == cast["alice"]
    assert client.get(f"/api/conversations/{cid}", **bearer(bob)).status_code == 404
    sent = client.post(f"/api/conversations/{cid}/messages", data={"text": "hi"},
                       content_type="application/json", **bearer(bob))
    assert sent.status_code == 404
    empty = client.post(f"/api/conversations/{cid}/messages", data={"text": "  "},
                        content_type="application/json", **bearer(alice))
    assert empty.status_code == 422 and "empty" in empty.json()["detail"]
    bad = client.post(f"/api/conversations/{cid}/messages", data={"txt": "hi"},
                      content_type="application/json", **bearer(alice))
    assert bad.status_code == 422 and "text" in bad.json()["detail"]


def test_workspace_files_list_and_download(cast, settings, tmp_path):
    settings.WORKSPACE_ROOT = tmp_path
    convo = Conversation.objects.create(owner=cast["alice"])
    root = tmp_path / f"user-{cast['alice'].pk}" / f"conversation-{convo.pk}"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "report.md").write_bytes("# Bericht ü\n".encode())
    (tmp_path / "secret.txt").write_text("outside")
    alice = api_keys.create_key(cast["alice"], "a", "chat").secret
    bob = api_keys.create_key(cast["bob"], "b", "chat,traces").secret
    otto = api_keys.create_key(cast["otto"], "o", "traces").secret
    client = Client()
    listing = client.get(f"/api/conversations/{convo.pk}/files", **bearer(alice)).json()
    assert [(f["path"], f["size"]) for f in listing] == [("docs/report.md", len("# Bericht ü\n".encode()))]
    got = client.get(f"/api/conversations/{convo.pk}/files/docs/report.md", **bearer(alice))
    assert got.status_code == 200 and b"".join(got.streaming_content) == "# Bericht ü\n".encode()
    assert "attachment" in got["Content-Disposition"]
    escape = client.get(f"/api/conversations/{convo.pk}/files/../../secret.txt", **bearer(alice))
    assert escape.status_code == 404
    assert client.get(f"/api/conversations/{convo.pk}/files", **bearer(bob)).status_code == 404
    assert client.get(f"/api/conversations/{convo.pk}/files", **bearer(otto)).status_code == 200  # auditor
