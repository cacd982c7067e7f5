"""Export (Markdown, JSON, every branch, secrets redacted, audited) and share links (read-only snapshot,
signed-in users only unless the admin allows public links, revocable, audited)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.test import Client

from chatapp.models import AuditEvent, Conversation, Message, Round, Run, ShareLink, ToolCall
from chatapp.redaction import register_secret

SECRET = "sk-live-verysecretvalue1234567890"


def client_for(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def convo(cast):
    """Two branches: q1 → a1, then q2 → a2 and its edit q2' → a2'. One tool call, one priced round."""
    register_secret(SECRET)
    convo = Conversation.objects.create(owner=cast["alice"], title="Sales")

    def exchange(text, parent, answer):
        q = Message.objects.create(conversation=convo, role="user", content=text, parent_run=parent,
                                   payload={"role": "user", "content": text})
        run = Run.objects.create(conversation=convo, user_message=q, provider_name="demo", model="m",
                                 status="succeeded", prompt_tokens=10, completion_tokens=5)
        q.run = run
        q.save()
        Message.objects.create(conversation=convo, run=run, role="assistant", content=answer)
        Round.objects.create(run=run, index=0, provider_name="demo", model="m", finish_reason="stop",
                             usage={"prompt_tokens": 10, "completion_tokens": 5}, cost="0.01",
                             request={"api_key": SECRET})
        return run

    r1 = exchange("q1", None, "a1 **bold**")
    ToolCall.objects.create(run=r1, round_index=0, index=0, call_id="c", name="read_file",
                            arguments='{"path": "sales.csv"}', result=f"key is {SECRET}", status="succeeded")
    r2 = exchange("q2", r1, "a2")
    r3 = exchange("q2 edited", r1, "a2 edited <script>alert(1)</script>")
    convo.active_run = r3
    convo.save()
    convo.runs_made = (r1, r2, r3)
    return convo


def test_json_export_holds_every_branch_and_parses_back(cast, convo):
    response = client_for(cast["alice"]).get(f"/c/{convo.pk}/export.json")
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    body = response.content.decode()
    assert SECRET not in body and "[REDACTED]" in body
    document = json.loads(body)
    r1, r2, r3 = (r.pk for r in convo.runs_made)
    assert sorted(b["run_ids"] for b in document["branches"]) == [[r1, r2], [r1, r3]]
    assert [b["active"] for b in document["branches"] if b["run_ids"] == [r1, r3]] == [True]
    by_id = {r["run_id"]: r for r in document["runs"]}
    assert by_id[r1]["tool_calls"][0]["arguments"] == '{"path": "sales.csv"}'
    assert by_id[r1]["tool_calls"][0]["result"] == "key is [REDACTED]"
    assert by_id[r3]["answer"].startswith("a2 edited")
    # Usage and cost per branch: each branch's runs together (two exchanges of 10 + 5 tokens at 0.01).
    for branch in document["branches"]:
        assert branch["usage"] == {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}
        assert Decimal(branch["cost"]["amount"]) == Decimal("0.02") and branch["cost"]["priced_rounds"] == 2
    assert Decimal(document["conversation"]["cost"]["amount"]) == Decimal("0.03")
    assert by_id[r1]["usage"]["prompt_tokens"] == 10 and by_id[r1]["cost"]["priced_rounds"] == 1
    assert document["conversation"]["owner"] == "alice"
    assert {m["content"] for m in document["messages"]} == {"q1", "q2", "q2 edited"}
    event = AuditEvent.objects.get(kind="export")
    assert event.actor == "alice" and event.payload["format"] == "conversation-json"


def test_markdown_export_reads_each_branch(cast, convo):
    text = client_for(cast["alice"]).get(f"/c/{convo.pk}/export.md").content.decode()
    assert text.startswith("# Sales\n")
    assert "## Branch 1" in text and "## Branch 2 (shown)" in text
    assert text.count("### You\n\nq1") == 2 and "q2 edited" in text
    assert "**Tool `read_file`** (succeeded)" in text and SECRET not in text
    assert '{"path": "sales.csv"}' in text and "Result:\n\n```\nkey is [REDACTED]\n```" in text
    assert text.count("*2 exchanges · 20 prompt / 10 completion tokens · cost USD 0.0200*") == 2


def test_exports_are_the_owners_and_auditors_only(cast, convo):
    assert client_for(cast["bob"]).get(f"/c/{convo.pk}/export.json").status_code == 404
    assert client_for(cast["otto"]).get(f"/c/{convo.pk}/export.md").status_code == 200
    assert client_for().get(f"/c/{convo.pk}/export.md").status_code == 302


def test_a_share_link_is_a_snapshot_for_signed_in_users_until_revoked(cast, convo):
    alice = client_for(cast["alice"])
    panel = alice.post(f"/c/{convo.pk}/share/new/").content.decode()
    link = ShareLink.objects.get()
    assert f"/s/{link.token}/" in panel
    # Later changes do not leak into the snapshot.
    Message.objects.filter(content="q2 edited").update(content="changed after sharing")
    bob = client_for(cast["bob"])
    page = bob.get(f"/s/{link.token}/").content.decode()
    assert "q2 edited" in page and "changed after sharing" not in page
    assert "<strong>bold</strong>" in page and "<script>alert(1)</script>" not in page
    assert ">q2<" not in page  # only the branch that was on screen
    assert SECRET not in page
    anonymous = client_for().get(f"/s/{link.token}/")
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    alice.post(f"/c/{convo.pk}/share/{link.pk}/revoke/")
    gone = bob.get(f"/s/{link.token}/")
    assert gone.status_code == 410 and "revoked" in gone.content.decode()
    kinds = list(AuditEvent.objects.filter(kind__startswith="share_").values_list("kind", flat=True))
    assert kinds == ["share_created", "share_revoked"]


def test_public_links_need_the_admins_setting(cast, convo, settings):
    alice = client_for(cast["alice"])
    settings.PUBLIC_SHARE_LINKS = False
    response = alice.post(f"/c/{convo.pk}/share/new/", {"public": "on"})
    assert response.status_code == 422 and "turned off by the administrator" in response.content.decode()
    assert not ShareLink.objects.exists()
    settings.PUBLIC_SHARE_LINKS = True
    alice.post(f"/c/{convo.pk}/share/new/", {"public": "on"})
    link = ShareLink.objects.get()
    assert client_for().get(f"/s/{link.token}/").status_code == 200
    settings.PUBLIC_SHARE_LINKS = False  # turning the setting off closes existing public links too
    assert client_for().get(f"/s/{link.token}/").status_code == 302


def test_only_the_owner_shares_or_revokes(cast, convo):
    assert client_for(cast["bob"]).post(f"/c/{convo.pk}/share/new/").status_code == 404
    assert client_for(cast["otto"]).post(f"/c/{convo.pk}/share/new/").status_code in (403, 404)
    client_for(cast["alice"]).post(f"/c/{convo.pk}/share/new/")
    link = ShareLink.objects.get()
    assert client_for(cast["bob"]).post(f"/c/{convo.pk}/share/{link.pk}/revoke/").status_code == 404
    assert ShareLink.objects.get().revoked_at is None
    assert client_for(cast["bob"]).get("/s/not-a-token/").status_code == 404
