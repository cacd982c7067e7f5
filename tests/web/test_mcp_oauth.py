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
