"""An OAuth-protected MCP server (Streamable HTTP) with its own authorization server, for tests.

Built from the mcp SDK's server auth pieces: ``create_auth_routes`` gives RFC 8414 metadata,
dynamic client registration, ``/authorize`` and ``/token`` (PKCE S256 checked by the SDK's token
handler), and the resource side answers 401 with ``WWW-Authenticate: ... resource_metadata`` and
serves the protected resource metadata. The consent page is ours: ``/consent`` shows the client's
name and an "Allow" button (a real page a browser goes through), and redirects back with the code.

Test hooks (plain HTTP, no auth): ``POST /test/expire`` makes every access token expired (the next
call refreshes), ``POST /test/reject-refresh`` makes refresh tokens refused (``invalid_grant``),
``POST /test/settings`` with JSON ``{"reject_refresh": false}`` accepts refreshes again,
``GET /test/stats`` counts tokens issued and refreshes and lists the notes.

Tools: ``whoami()`` answers with the subject the token was issued to; ``add_note(text)`` keeps the
note (a side effect: ``/test/stats`` lists every note, so a test sees a call that ran twice).
Usage: python oauth_server.py --port N
"""

from __future__ import annotations

import argparse
import html
import secrets
import time
from urllib.parse import urlencode

from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response


class Provider:
    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.pending: dict[str, tuple[str, AuthorizationParams]] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.reject_refresh = False
        self.stats: dict = {"issued": 0, "refreshed": 0, "refresh_refused": 0, "notes": []}

    async def get_client(self, client_id: str):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        ticket = secrets.token_urlsafe(16)
        self.pending[ticket] = (client.client_id, params)
        return f"{ISSUER}/consent?{urlencode({'ticket': ticket})}"

    async def load_authorization_code(self, client, authorization_code: str):
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource, subject) -> OAuthToken:
        access, refresh = "at-" + secrets.token_urlsafe(24), "rt-" + secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + 3600,
            resource=resource,
            subject=subject,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject=subject
        )
        self.stats["issued"] += 1
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=3600,
            refresh_token=refresh,
            scope=" ".join(scopes) or None,
        )

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode):
        self.codes.pop(authorization_code.code, None)
        return self._issue(
            client.client_id,
            authorization_code.scopes,
            authorization_code.resource,
            authorization_code.subject,
        )

    async def load_refresh_token(self, client, refresh_token: str):
        token = self.refresh.get(refresh_token)
        return token if token and token.client_id == client.client_id else None

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes: list[str]):
        if self.reject_refresh:
            self.stats["refresh_refused"] += 1
            raise TokenError("invalid_grant", "refresh token revoked")
        self.refresh.pop(refresh_token.token, None)
        self.stats["refreshed"] += 1
        return self._issue(
            client.client_id, scopes or refresh_token.scopes, refresh_token.resource, refresh_token.subject
        )

    async def load_access_token(self, token: str):
        found = self.access.get(token)
        if found and found.expires_at and found.expires_at < time.time():
            return None
        return found

    async def revoke_token(self, token) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


provider = Provider()
ISSUER = ""
server: MCPServer


def build(port: int) -> MCPServer:
    global ISSUER, server
    ISSUER = f"http://127.0.0.1:{port}"
    server = MCPServer(
        "oauth-test",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=ISSUER,
            resource_server_url=f"{ISSUER}/mcp",
            validate_token_resource=True,
            client_registration_options=ClientRegistrationOptions(enabled=True),
        ),
    )

    @server.tool()
    def whoami() -> str:
        """Who the token was issued to."""
        token = get_access_token()
        return f"signed in as {token.subject if token else 'nobody'}"

    @server.tool()
    def add_note(text: str) -> str:
        """Keep a note (each call adds one)."""
        provider.stats["notes"].append(text)
        return f"noted: {text}"

    @server.custom_route("/consent", methods=["GET", "POST"])
    async def consent(request: Request) -> Response:
        ticket = request.query_params.get("ticket", "")
        if ticket not in provider.pending:
            return HTMLResponse("<p>Unknown or used sign-in.</p>", status_code=400)
        client_id, params = provider.pending[ticket]
        if request.method == "GET":
            name = html.escape(provider.clients[client_id].client_name or client_id)
            return HTMLResponse(
                f"<h1>Example MCP: allow {name}?</h1><form method=post>"
                "<label>Your name <input name=subject value=alice></label>"
                "<button name=answer value=allow>Allow</button>"
                "<button name=answer value=deny>Deny</button></form>"
            )
        form = await request.form()
        del provider.pending[ticket]
        if form.get("answer") != "allow":
            target = construct_redirect_uri(
                str(params.redirect_uri), error="access_denied", state=params.state
            )
            return RedirectResponse(target, status_code=302)
        code = "code-" + secrets.token_urlsafe(16)
        provider.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=str(form.get("subject") or "alice"),
        )
        return RedirectResponse(
            construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state), status_code=302
        )

    @server.custom_route("/test/expire", methods=["POST"])
    async def expire(request: Request) -> Response:
        for token in provider.access.values():
            token.expires_at = 1
        return JSONResponse({"ok": True})

    @server.custom_route("/test/reject-refresh", methods=["POST"])
    async def reject(request: Request) -> Response:
        provider.reject_refresh = True
        return JSONResponse({"ok": True})

    @server.custom_route("/test/settings", methods=["POST"])
    async def settings(request: Request) -> Response:
        body = await request.json()
        provider.reject_refresh = bool(body.get("reject_refresh", provider.reject_refresh))
        return JSONResponse({"ok": True})

    @server.custom_route("/test/stats", methods=["GET"])
    async def stats(request: Request) -> Response:
        return JSONResponse(
            {**provider.stats, "resources": sorted({t.resource or "" for t in provider.access.values()})}
        )

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    build(args.port).run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
