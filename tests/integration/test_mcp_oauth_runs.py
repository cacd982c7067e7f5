"""MCP OAuth through the real worker (issue 13 item 4): a sign-in that stops working in the middle of
a run parks the run in ``awaiting_sign_in`` instead of failing the call, and after the user signs in
again the run goes on, running only what had not run; a user who has not signed in is offered the
tools (the list another session saw) and waits only when one of them is called."""

from __future__ import annotations

import json
from urllib.parse import urlparse

import pytest

from chatapp.frames import Kind
from chatapp.models import Conversation, McpOAuthGrant, McpServer, Round, Run, RunEvent, ToolCall, ToolPolicy
from chatapp.services.runs import start_run
from chatapp.workspaces import workspace_path
from tests.durable.harness import wait_until
from tests.mcp import oauth_fixtures

pytestmark = pytest.mark.django_db(transaction=True)
oauth_server = oauth_fixtures.oauth_server  # the fixture, used by name
ENDED = ("succeeded", "failed", "cancelled", "denied")


def _notes(url: str) -> McpServer:
    ToolPolicy.objects.update_or_create(
        pattern="notes__*", defaults={"tier": "read_only", "approval": "never"}
    )
    return McpServer.objects.create(name="notes", transport="http", url=url, auth_mode="per_user")


def _signs_in(client, user, server: McpServer, oauth, subject: str) -> None:
    """What the user's browser does: the chat's "Sign in" button, the consent page, the callback."""
    client.force_login(user)
    response = client.post(f"/mcp/{server.id}/sign-in/", {"next": "/"})
    assert response.status_code == 200, response.content[:300]
    back = urlparse(oauth.consent(response.context["target"], subject=subject))
    assert client.get(f"{back.path}?{back.query}").status_code == 302
    assert McpOAuthGrant.objects.get(server=server, user=user).state == "signed_in"


def _wait(run: Run, *statuses: str) -> Run:
    wait_until(lambda: Run.objects.get(pk=run.pk).status in statuses, 90, f"run {run.pk} is {statuses}")
    run.refresh_from_db()
    return run


def _waiting_for(run: Run) -> list[dict]:
    last = RunEvent.objects.filter(run=run, type=Kind.STATUS).order_by("-seq").first()
    return last.payload.get("servers") or []


def test_a_sign_in_lost_mid_run_parks_the_run_and_it_goes_on_after_the_new_sign_in(
    demo_tools, live_stack, cast, client, oauth_server
):
    alice = cast["alice"]
    server = _notes(oauth_server.url)
    _signs_in(client, alice, server, oauth_server, "alice")
    convo = Conversation.objects.create(owner=alice, provider=demo_tools)
    first = _wait(start_run(convo, '[[demo:call notes__add_note {"text": "one"}]]'), *ENDED)
    assert first.status == "succeeded", (first.status, first.error)
    # The worker kept the list it saw, for users who have not signed in (gap b).
    assert {t["remote_name"] for t in McpServer.objects.get(pk=server.pk).tools_seen} == {
        "whoami",
        "add_note",
    }

    # The provider stops accepting Alice's tokens (expired, refresh refused) while the worker's
    # session still holds them: the next call is refused with 401 and would need a new sign-in.
    oauth_server.hook("expire")
    oauth_server.hook("reject-refresh")
    second = start_run(
        convo,
        '[[demo:call append_file {"path": "log.txt", "content": "x\\n"}]] '
        '[[demo:call notes__add_note {"text": "two"}]]',
    )
    second = _wait(second, "awaiting_sign_in", *ENDED)
    assert second.status == "awaiting_sign_in", (second.status, second.error)
    # Parked: the ending segment lets go of its lease right after the move, then no worker holds it.
    wait_until(lambda: Run.objects.get(pk=second.pk).lease_owner == "", 30, "the segment lets the lease go")
    calls = {c.name: c for c in ToolCall.objects.filter(run=second)}
    assert calls["append_file"].status == "succeeded"
    held = calls["notes__add_note"]
    assert (held.status, held.error_code) == ("approved", "sign_in_required")
    assert [(s["name"], s["by"]) for s in _waiting_for(second)] == [("notes", "you")]
    grant = McpOAuthGrant.objects.get(server=server, user=alice)
    assert grant.state == "sign_in_needed" and grant.tokens_encrypted == ""
    assert oauth_server.hook("stats")["notes"] == ["one"]

    oauth_server.hook("settings", reject_refresh=False)
    _signs_in(client, alice, server, oauth_server, "alice")
    second = _wait(second, *ENDED)
    assert second.status == "succeeded", (second.status, second.error)
    held.refresh_from_db()
    assert held.status == "succeeded" and "noted: two" in held.result
    # Nothing ran twice: the note once after the sign-in, the file appended to once.
    assert oauth_server.hook("stats")["notes"] == ["one", "two"]
    assert (workspace_path(alice.pk, convo.pk) / "log.txt").read_text() == "x\n"
    assert ToolCall.objects.get(run=second, name="append_file").attempts == 1


def test_a_user_not_signed_in_is_offered_the_tools_and_waits_only_when_one_is_called(
    demo_tools, live_stack, cast, client, oauth_server
):
    server = _notes(oauth_server.url)
    # Alice's session lists the server once; Bob has never signed in.
    _signs_in(client, cast["alice"], server, oauth_server, "alice")
    alices = Conversation.objects.create(owner=cast["alice"], provider=demo_tools)
    assert _wait(start_run(alices, "[[demo:call notes__whoami {}]]"), *ENDED).status == "succeeded"
    bob = cast["bob"]
    convo = Conversation.objects.create(owner=bob, provider=demo_tools)

    chat = _wait(start_run(convo, "Hello there"), "awaiting_sign_in", *ENDED)
    assert chat.status == "succeeded", (chat.status, chat.error)  # no wait: no tool of it was needed
    request = json.dumps(Round.objects.filter(run=chat).first().request)
    assert '"notes__whoami"' in request and '"notes__add_note"' in request

    call = _wait(start_run(convo, "[[demo:call notes__whoami {}]]"), "awaiting_sign_in", *ENDED)
    assert call.status == "awaiting_sign_in", (call.status, call.error)
    assert [(s["name"], s["by"]) for s in _waiting_for(call)] == [("notes", "you")]
    _signs_in(client, bob, server, oauth_server, "bob-at-notes")
    call = _wait(call, *ENDED)
    assert call.status == "succeeded", (call.status, call.error)
    assert "signed in as bob-at-notes" in ToolCall.objects.get(run=call).result


def test_a_shared_sign_in_lost_mid_run_waits_for_the_admin_and_every_waiting_run_goes_on(
    demo_tools, live_stack, cast, client, oauth_server
):
    """ "One connection for everyone": the refresh refused in the middle of a user's run shows "sign
    in again" to the admin and "needs an administrator" to the user; the admin's new sign-in resumes
    the run."""
    server = _notes(oauth_server.url)
    McpServer.objects.filter(pk=server.pk).update(auth_mode="shared")
    server.refresh_from_db()
    ada, alice = cast["ada"], cast["alice"]
    client.force_login(ada)
    consent = client.post(f"/mcp/{server.id}/sign-in/").context["target"]
    back = urlparse(oauth_server.consent(consent, subject="team"))
    assert client.get(f"{back.path}?{back.query}").status_code == 302
    convo = Conversation.objects.create(owner=alice, provider=demo_tools)
    assert _wait(start_run(convo, "[[demo:call notes__whoami {}]]"), *ENDED).status == "succeeded"

    oauth_server.hook("expire")
    oauth_server.hook("reject-refresh")
    run = _wait(start_run(convo, '[[demo:call notes__add_note {"text": "two"}]]'), "awaiting_sign_in", *ENDED)
    assert run.status == "awaiting_sign_in", (run.status, run.error)
    assert [(s["name"], s["by"]) for s in _waiting_for(run)] == [("notes", "admin")]
    assert b"sign in again" in client.get(f"/admin/chatapp/mcpserver/{server.id}/change/").content
    client.force_login(alice)
    assert b"needs an administrator to sign in again" in client.get(f"/c/{convo.pk}/").content

    oauth_server.hook("settings", reject_refresh=False)
    client.force_login(ada)
    consent = client.post(f"/mcp/{server.id}/sign-in/").context["target"]
    back = urlparse(oauth_server.consent(consent, subject="team"))
    assert client.get(f"{back.path}?{back.query}").status_code == 302
    run = _wait(run, *ENDED)
    assert run.status == "succeeded", (run.status, run.error)
    assert oauth_server.hook("stats")["notes"] == ["two"]
