"""agent/mcp/oauth.py: the pieces clearloop adds around the SDK's OAuth client provider (the flow
itself is proven end to end by the conformance suite's auth/* scenarios, tests/conformance)."""

from __future__ import annotations

import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthToken

from agent.mcp.config import McpServerConfig
from agent.mcp.oauth import MemoryTokenStorage, oauth_provider, pre_registered


async def _never() -> AuthorizationCodeResult:
    raise AssertionError("no sign-in expected")


async def _no_redirect(url: str) -> None:
    raise AssertionError("no sign-in expected")


async def test_provider_is_an_httpx2_auth_carried_by_the_config():
    storage = MemoryTokenStorage()
    auth = oauth_provider("https://mcp.example.com/mcp", storage, redirect_uri="https://app.example.com/cb",
                          redirect_handler=_no_redirect, callback_handler=_never)
    assert isinstance(auth, OAuthClientProvider) and isinstance(auth, httpx2.Auth)
    assert auth.context.client_metadata.application_type == "web"
    config = McpServerConfig(name="notion", transport="http", url="https://mcp.example.com/mcp", auth=auth)
    # The auth object is no part of a config's identity (configs are compared to spot edits).
    assert config == McpServerConfig(name="notion", transport="http", url="https://mcp.example.com/mcp")
    assert "auth" not in repr(config)


async def test_memory_storage_and_pre_registration():
    info = pre_registered("cid", "secret", "http://localhost:3000/callback")
    assert info.token_endpoint_auth_method == "client_secret_basic"
    assert pre_registered("cid", None, "http://localhost:3000/callback").token_endpoint_auth_method == "none"
    storage = MemoryTokenStorage(info)
    assert await storage.get_client_info() is info and await storage.get_tokens() is None
    await storage.set_tokens(OAuthToken(access_token="a", refresh_token="r"))
    assert (await storage.get_tokens()).refresh_token == "r"


@pytest.mark.parametrize("uri, kind", [("http://localhost:3000/callback", "native"),
                                       ("https://chat.example.org/mcp/oauth/callback/", "web")])
async def test_application_type_follows_the_redirect(uri, kind):
    auth = oauth_provider("https://mcp.example.com/mcp", MemoryTokenStorage(), redirect_uri=uri,
                          redirect_handler=_no_redirect, callback_handler=_never)
    assert auth.context.client_metadata.application_type == kind
