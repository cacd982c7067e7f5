"""MCP OAuth on the web side (issue 13 item 4): grants encrypted in PostgreSQL, the admin's sign-in
for everyone through the provider's consent page, the worker's use and refresh of the grant, and a
refused refresh shown as "sign in again"."""

from __future__ import annotations

import asyncio
from urllib.parse import urlparse

import pytest
from django.db import connection
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from agent.mcp import McpPool
from chatapp.models import McpOAuthGrant, McpServer
from chatapp.services import mcp_oauth
from chatapp.services.mcp_config import to_config
from tests.mcp import oauth_fixtures

oauth_server = oauth_fixtures.oauth_server  # the fixture, used by name

pytestmark = pytest.mark.django_db(transaction=True)


def _server(url: str, mode: str = "shared") -> McpServer:
    return McpServer.objects.create(name="notes", transport="http", url=url, auth_mode=mode)


def test_grant_columns_hold_no_plaintext_token(cast):
    server = _server("https://mcp.example.com/mcp")
    storage = mcp_oauth.GrantStorage(server.id, cast["alice"].id)
    tokens = OAuthToken(access_token="at-plain-4711", refresh_token="rt-plain-4712", expires_in=60)
    info = OAuthClientInformationFull(
        client_id="cid-1", client_secret="cs-plain-4713", redirect_uris=["https://app.example/cb"]
    )
    asyncio.run(storage.set_tokens(tokens))
    asyncio.run(storage.set_client_info(info))
    with connection.cursor() as cursor:
        cursor.execute("SELECT tokens_encrypted, client_info_encrypted FROM chatapp_mcpoauthgrant")
        raw = " ".join(cursor.fetchone())
    for secret in ("at-plain-4711", "rt-plain-4712", "cs-plain-4713"):
        assert secret not in raw
    assert asyncio.run(storage.get_tokens()).refresh_token == "rt-plain-4712"
    assert asyncio.run(storage.get_client_info()).client_secret == "cs-plain-4713"
    # Nobody else's grant: the shared one (user None) is a different row and empty.
    assert asyncio.run(mcp_oauth.GrantStorage(server.id, None).get_tokens()) is None


def _admin_signs_in(client, server: McpServer, oauth) -> str:
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.get(username="ada"))
    response = client.post(f"/mcp/{server.id}/sign-in/")
    assert response.status_code == 200
    consent = response.context["target"]
    assert consent.startswith(oauth.base + "/authorize?")
    assert "code_challenge_method=S256" in consent and "resource=" in consent
    back = urlparse(oauth.consent(consent))
    assert back.path == "/mcp/oauth/callback/"
    done = client.get(f"{back.path}?{back.query}")
    assert done.status_code == 302
    return done["Location"]


def _time_passes(server: McpServer) -> None:
    """An hour later: the server has expired the access token, and so has the stored copy."""
    import json

    from chatapp.secrets import decrypt, encrypt

    grant = McpOAuthGrant.objects.get(server=server, user=None)
    stored = json.loads(decrypt(grant.tokens_encrypted))
    stored["expires_at"] = 1.0
    grant.tokens_encrypted = encrypt(json.dumps(stored))
    grant.save()


def _whoami(server: McpServer) -> str:
    return asyncio.run(_call(to_config(server)))


async def _call(config) -> str:
    async with McpPool([config]) as pool:
        result = await pool.call_tool("notes", "whoami", {})
    return str(result)


def test_admin_signs_in_for_everyone_and_the_worker_uses_and_refreshes_the_grant(cast, client, oauth_server):
    server = _server(oauth_server.url)
    back = _admin_signs_in(client, server, oauth_server)
    assert back == f"/admin/chatapp/mcpserver/{server.id}/change/"
    grant = McpOAuthGrant.objects.get(server=server, user=None)
    assert grant.state == "signed_in" and "at-" not in grant.tokens_encrypted
    # The token was asked for this resource (RFC 8707), with PKCE (the SDK's token handler checks S256).
    assert oauth_server.hook("stats")["resources"] == [oauth_server.url]
    page = client.get(back)
    assert b"signed in for everyone" in page.content and b"Sign in again" in page.content

    assert "signed in as alice" in _whoami(server)
    oauth_server.hook("expire")
    _time_passes(server)
    assert "signed in as alice" in _whoami(server)
    assert oauth_server.hook("stats")["refreshed"] == 1


def test_a_refused_refresh_shows_sign_in_again(cast, client, oauth_server):
    server = _server(oauth_server.url)
    _admin_signs_in(client, server, oauth_server)
    oauth_server.hook("expire")
    _time_passes(server)
    oauth_server.hook("reject-refresh")
    with pytest.raises(Exception):  # noqa: B017 - the pool wraps the reason; the grant records it
        _whoami(server)
    assert oauth_server.hook("stats")["refresh_refused"] == 1
    grant = McpOAuthGrant.objects.get(server=server, user=None)
    assert grant.state == "sign_in_needed" and grant.tokens_encrypted == ""
    page = client.get(f"/admin/chatapp/mcpserver/{server.id}/change/")
    assert b"sign in again" in page.content


def test_a_callback_from_another_browser_reaches_no_sign_in(cast, client, oauth_server):
    server = _server(oauth_server.url)
    client.force_login(cast["ada"])
    consent = client.post(f"/mcp/{server.id}/sign-in/").context["target"]
    back = urlparse(oauth_server.consent(consent))
    from django.test import Client

    other = Client()
    other.force_login(cast["ada"])
    assert other.get(f"{back.path}?{back.query}").status_code == 400
    assert not McpOAuthGrant.objects.filter(server=server, state="signed_in").exists()


def test_only_an_admin_signs_in_for_everyone(cast, client, oauth_server):
    server = _server(oauth_server.url)
    client.force_login(cast["alice"])
    assert client.post(f"/mcp/{server.id}/sign-in/").status_code == 403


def test_runs_wait_for_the_sign_ins_they_need(cast):
    url = "https://mcp.example.com/mcp"
    per_user = _server(url, "per_user")
    shared = McpServer.objects.create(name="team", transport="http", url=url, auth_mode="shared")
    alice = cast["alice"].id
    assert [(s["name"], s["by"]) for s in mcp_oauth.sign_ins_needed(alice)] == [
        ("notes", "you"),
        ("team", "admin"),
    ]
    # A server the conversation switched off is not waited for.
    assert [s["name"] for s in mcp_oauth.sign_ins_needed(alice, {"notes"})] == ["team"]
    mcp_oauth.write_tokens(per_user.id, alice, OAuthToken(access_token="a", refresh_token="r"))
    mcp_oauth.write_tokens(shared.id, None, OAuthToken(access_token="b", refresh_token="s"))
    assert mcp_oauth.sign_ins_needed(alice) == []
    # Bob has not signed in to "notes"; a refused refresh puts the shared one back to "sign in again".
    mcp_oauth.mark_sign_in_needed(shared.id, None, "refresh refused")
    assert [s["name"] for s in mcp_oauth.sign_ins_needed(cast["bob"].id)] == ["notes", "team"]


def test_a_refresh_refused_mid_session_holds_that_call_and_a_new_sign_in_is_picked_up(
    cast, client, oauth_server
):
    """Gap (a) at the MCP layer: in the worker's live session the access token expires, the provider
    refuses the refresh, and the call is reported "sign-in required, nothing sent" (not a lost
    connection whose outcome is unknown). After a new sign-in in another process (the web), the same
    pool with the same config picks the new tokens up from the grant."""
    from agent.mcp import McpToolbox
    from agent.toolbox import ToolContext

    server = _server(oauth_server.url)
    _admin_signs_in(client, server, oauth_server)
    config = to_config(server)
    loop = asyncio.new_event_loop()
    pool = McpPool([config])
    box = McpToolbox(pool, [config])
    ctx = ToolContext(run_key="r", timeout=20)

    def note(text: str):
        return loop.run_until_complete(box.execute("notes__add_note", {"text": text}, ctx))

    try:
        loop.run_until_complete(box.list_tools())
        assert note("one").ok
        # An hour later: the server has expired the token, the worker's copy has expired too, and
        # the provider no longer accepts the refresh token.
        oauth_server.hook("expire")
        oauth_server.hook("reject-refresh")
        config.auth.context.token_expiry_time = 1.0
        held = note("two")
        assert (held.ok, held.code) == (False, "sign_in_required"), held
        assert "needs a sign-in" in held.error and "was not sent" in held.error
        assert oauth_server.hook("stats")["refresh_refused"] == 1
        assert McpOAuthGrant.objects.get(server=server, user=None).state == "sign_in_needed"
        # The admin signs in again (the web process); the worker's pool is not told.
        oauth_server.hook("settings", reject_refresh=False)
        _admin_signs_in(client, server, oauth_server)
        assert note("three").ok
    finally:
        loop.run_until_complete(pool.aclose())
        loop.close()
    # "two" never reached the server; nothing ran twice.
    assert oauth_server.hook("stats")["notes"] == ["one", "three"]


def _test_connection(client, server: McpServer) -> str:
    response = client.post(f"/admin/chatapp/mcpserver/{server.id}/test-connection/")
    assert response.status_code == 200
    return response.content.decode()


def test_test_connection_says_sign_in_needed_and_uses_the_grant(cast, client, oauth_server):
    """Gap (c): Test connection of an OAuth server uses a grant and never shows the bare 401."""
    shared = _server(oauth_server.url)
    per_user = McpServer.objects.create(name="mine", transport="http", url=oauth_server.url, auth_mode="per_user")
    client.force_login(cast["ada"])
    for server, button in ((shared, "Sign in for everyone"), (per_user, "Sign in with my account")):
        page = _test_connection(client, server)
        assert 'data-role="sign-in-needed"' in page and button in page, page[-2000:]
        assert "401" not in page
    assert b"Sign in with my account" in client.get(f"/admin/chatapp/mcpserver/{per_user.id}/change/").content

    _admin_signs_in(client, shared, oauth_server)
    page = _test_connection(client, shared)
    assert "connected" in page and "notes__whoami" in page and "notes__add_note" in page
    # The listing is kept for the users who have not signed in yet.
    shared.refresh_from_db()
    assert {t["remote_name"] for t in shared.tools_seen} == {"whoami", "add_note"}
    # "Each user signs in": the admin's own sign-in is what Test connection uses.
    response = client.post(f"/mcp/{per_user.id}/sign-in/", {"next": f"/admin/chatapp/mcpserver/{per_user.id}/change/"})
    back = urlparse(oauth_server.consent(response.context["target"], subject="ada"))
    assert client.get(f"{back.path}?{back.query}")["Location"].endswith(f"/{per_user.id}/change/")
    page = _test_connection(client, per_user)
    assert "connected" in page and "mine__whoami" in page
