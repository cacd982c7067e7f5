"""MCP OAuth in the browser (issue 13 item 4), against a local OAuth-protected MCP server with its
own authorization server and consent page (tests/mcp/servers/oauth_server.py): a user's run waits
for the user's sign-in, holding no worker, and goes on after it; an admin signs in for everyone."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from chatapp.models import McpOAuthGrant, McpServer, Run, ToolCall, ToolPolicy
from tests.browser.pages import new_conversation
from tests.mcp import oauth_fixtures

pytestmark = pytest.mark.django_db(transaction=True)
oauth_server = oauth_fixtures.oauth_server  # the fixture, used by name


def _notes(url: str, mode: str) -> McpServer:
    ToolPolicy.objects.update_or_create(pattern="notes__*", defaults={"tier": "read_only", "approval": "never"})
    return McpServer.objects.create(name="notes", transport="http", url=url, auth_mode=mode)


def _consent(page, subject: str) -> None:
    page.wait_for_url(re.compile(r"/consent\?"))
    expect(page.locator("h1")).to_contain_text("allow clearloop?")
    page.fill("input[name=subject]", subject)
    page.click("button[value=allow]")


def test_a_users_run_waits_for_the_sign_in_and_goes_on_after_the_consent_page(
    cast, demo_provider, oauth_server, page_for, artifacts
):
    server = _notes(oauth_server.url, "per_user")
    page = page_for("alice", "alice-pass")
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    page.fill("#message", "[[demo:call notes__whoami {}]]")
    page.press("#message", "Enter")
    button = page.locator("[data-role=sign-in-button]")
    expect(button).to_have_text("Sign in to notes", timeout=60_000)
    run = Run.objects.get(conversation__owner=cast["alice"])
    # Parked like an approval wait: visible, and no worker holds it.
    assert run.status == "awaiting_sign_in" and run.lease_owner == ""
    expect(page.locator("[data-role=status]")).to_have_text("Awaiting sign-in")
    page.screenshot(path=str(artifacts / "mcp-sign-in-waiting.png"))
    button.click()
    _consent(page, "alice-at-notes")
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    page.locator("[data-role=answer]").wait_for(timeout=90_000)
    run.refresh_from_db()
    assert run.status == "succeeded"
    call = ToolCall.objects.get(run=run)
    assert call.status == "succeeded" and "signed in as alice-at-notes" in call.result
    grant = McpOAuthGrant.objects.get(server=server, user=cast["alice"])
    assert grant.state == "signed_in" and "alice-at-notes" not in grant.tokens_encrypted
    # Bob has signed in to nothing: his grant does not exist, Alice's is hers alone.
    assert not McpOAuthGrant.objects.filter(server=server, user=cast["bob"]).exists()


def test_the_admin_signs_in_for_everyone_from_the_servers_admin_page(
    cast, demo_provider, oauth_server, page_for, artifacts
):
    server = _notes(oauth_server.url, "shared")
    page = page_for("ada", "ada-pass")
    page.goto(f"/admin/chatapp/mcpserver/{server.id}/change/")
    expect(page.locator("text=nobody has signed in yet")).to_be_visible()
    page.click("text=Sign in for everyone")
    _consent(page, "team-account")
    page.wait_for_url(re.compile(rf"/admin/chatapp/mcpserver/{server.id}/change/$"))
    expect(page.locator("text=signed in for everyone")).to_be_visible()
    page.screenshot(path=str(artifacts / "mcp-admin-signed-in.png"))
    assert McpOAuthGrant.objects.get(server=server, user=None).state == "signed_in"


def test_once_the_tools_are_known_a_user_signs_in_when_the_model_calls_one(
    cast, demo_provider, oauth_server, page_for, artifacts
):
    """The admin tests the server with their own account (which keeps its tool list); Alice, never
    signed in, is offered its tools, the model calls one, and the run waits at that call."""
    server = _notes(oauth_server.url, "per_user")
    admin = page_for("ada", "ada-pass")
    admin.goto(f"/admin/chatapp/mcpserver/{server.id}/change/")
    admin.click("text=Test connection")
    expect(admin.locator("[data-role=sign-in-needed]")).to_have_text("sign-in needed")
    admin.goto(f"/admin/chatapp/mcpserver/{server.id}/change/")
    admin.click("text=Sign in with my account")
    _consent(admin, "ada-at-notes")
    admin.wait_for_url(re.compile(rf"/admin/chatapp/mcpserver/{server.id}/change/$"))
    admin.click("text=Test connection")
    expect(admin.locator("text=notes__add_note")).to_be_visible()

    page = page_for("alice", "alice-pass")
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    page.fill("#message", '[[demo:call notes__add_note {"text": "from alice"}]]')
    page.press("#message", "Enter")
    button = page.locator("[data-role=sign-in-button]")
    expect(button).to_have_text("Sign in to notes", timeout=60_000)
    run = Run.objects.get(conversation__owner=cast["alice"])
    # It waited at the call the model made, not at its start; the call was not sent.
    call = ToolCall.objects.get(run=run)
    assert (call.status, call.error_code) == ("approved", "sign_in_required")
    assert run.status == "awaiting_sign_in" and run.lease_owner == ""
    page.screenshot(path=str(artifacts / "mcp-sign-in-at-the-call.png"))
    button.click()
    _consent(page, "alice-at-notes")
    page.locator("[data-role=answer]").wait_for(timeout=90_000)
    run.refresh_from_db()
    call.refresh_from_db()
    assert run.status == "succeeded" and call.status == "succeeded"
    assert oauth_server.hook("stats")["notes"] == ["from alice"]
