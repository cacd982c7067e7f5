"""OAuth 2.1 for HTTP MCP servers, through the SDK's ``OAuthClientProvider`` (an ``httpx2.Auth``).

The SDK does the protocol of the MCP authorization spec: on a 401 it reads the Protected Resource
Metadata (``WWW-Authenticate`` ``resource_metadata``, then the well-known URLs), the authorization
server's metadata (RFC 8414 / OpenID discovery), registers the client (a Client ID Metadata Document
when ``client_metadata_url`` is given and the server supports it, else dynamic registration, unless
client credentials are stored already), runs the authorization code flow with PKCE S256 and the RFC
8707 ``resource`` parameter, refreshes tokens, and steps the scope up on 403 ``insufficient_scope``.
The host supplies where tokens live (``TokenStorage``: the web app encrypts them in PostgreSQL) and
what happens when a person must sign in (``redirect_handler`` / ``callback_handler``).

A process that cannot wait for a person (a worker) raises ``SignInRequired`` from its redirect
handler. The request that needed the sign-in is then not sent: the provider records the need on
itself (``pending_sign_in``) and on the ``tools/call`` whose request it was (``CallHooks.sign_in``;
the SDK runs a request's POST, auth flow included, in the caller's context), so the pool can tell
that call "not run, sign-in needed" apart from a call cut off by the closed connection. The provider
also forgets that it had loaded the storage, so the next request reads the tokens a person has
stored meanwhile (in another process) instead of asking again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from agent.mcp.elicitation import current_call

CLIENT_NAME = "clearloop"


class SignInRequired(Exception):
    """A host's redirect handler raises it where nobody can sign in now; nothing was sent."""

    def __init__(self, server: str, message: str = "") -> None:
        super().__init__(message or f"{server} needs a sign-in")
        self.server = server


class MemoryTokenStorage:
    """Tokens and client registration held in memory (one process, e.g. the conformance client)."""

    def __init__(self, client_info: OAuthClientInformationFull | None = None) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info = client_info

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class StoredTokenProvider(OAuthClientProvider):
    """The SDK's provider, which also knows when tokens loaded from storage expire.

    The SDK sets the expiry only when it receives tokens, so a process that loads a stored, expired
    token sends it, gets a 401 and starts a whole new authorization instead of refreshing. A storage
    that returns ``expires_in`` as the time *left* (the web app's grant storage does) makes the
    provider refresh first, as it would in the process that got the token.
    """

    sign_in_required: SignInRequired | None = None

    async def _initialize(self) -> None:
        await super()._initialize()
        if self.context.current_tokens is not None:
            self.context.update_token_expiry(self.context.current_tokens)
            self.sign_in_required = None  # someone signed in (or it never was needed)

    def needs_person(self, exc: SignInRequired) -> None:
        """Called as ``exc`` leaves the redirect handler: remember it, on the provider and on the
        call whose request needed it, and re-read the storage before the next request."""
        self.sign_in_required = exc
        self._initialized = False
        hooks = current_call.get()
        if hooks is not None:
            hooks.sign_in = exc


def pending_sign_in(auth: object) -> SignInRequired | None:
    """The sign-in an ``auth`` (a config's) last found missing, if nobody has signed in since."""
    return getattr(auth, "sign_in_required", None)


def pre_registered(
    client_id: str, client_secret: str | None, redirect_uri: str
) -> OAuthClientInformationFull:
    """Credentials an admin got from the authorization server out of band (no registration)."""
    return OAuthClientInformationFull(
        client_id=client_id,
        client_secret=client_secret or None,
        redirect_uris=[AnyUrl(redirect_uri)],
        token_endpoint_auth_method="client_secret_basic" if client_secret else "none",
    )


def oauth_provider(
    server_url: str,
    storage: TokenStorage,
    *,
    redirect_uri: str,
    redirect_handler: Callable[[str], Awaitable[None]],
    callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]],
    client_metadata_url: str | None = None,
    scope: str | None = None,
) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[AnyUrl(redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=scope,
        application_type="native"
        if "://localhost" in redirect_uri or "://127.0.0.1" in redirect_uri
        else "web",
    )

    async def redirect(url: str) -> None:
        try:
            await redirect_handler(url)
        except SignInRequired as exc:
            provider.needs_person(exc)
            raise

    provider = StoredTokenProvider(
        server_url=server_url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback_handler,
        client_metadata_url=client_metadata_url,
    )
    return provider
