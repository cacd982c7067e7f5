"""MCP OAuth 2.1 on the web side (issue 13 item 4): grants in PostgreSQL, encrypted, and sign-in.

``GrantStorage`` is the SDK's ``TokenStorage`` over one ``McpOAuthGrant`` row (server, user or none
for "one connection for everyone"); every value goes through ``chatapp.secrets`` (Fernet), so the
table holds no token in the clear, and every token read is registered with the redactor.

A sign-in (``start_sign_in``) runs the SDK's ``OAuthClientProvider`` in a thread of the web process:
its ``redirect_handler`` hands the consent-page URL back to the view that started it (which sends the
browser there) and its ``callback_handler`` awaits the code that ``deliver_callback`` (the callback
view, in any web process) routes to it through the channel layer, on a channel named after the
``state``. The SDK then exchanges the code (PKCE S256, ``resource``) and stores the tokens here.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from dataclasses import dataclass
from urllib.parse import parse_qs, urlparse

from asgiref.sync import sync_to_async
from channels.layers import DEFAULT_CHANNEL_LAYER, channel_layers
from django.db import connection as db_connection
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken

from agent.mcp.oauth import SignInRequired, oauth_provider
from chatapp.models import McpOAuthGrant, McpServer
from chatapp.redaction import register_secret
from chatapp.secrets import decrypt, encrypt

log = logging.getLogger(__name__)

CALLBACK_GROUP = "mcp_oauth_{state}"
URL_WAIT = 20.0  # seconds the starting view waits for the consent-page URL
CODE_WAIT = 600.0  # seconds a sign-in waits for the person to come back from the consent page
DONE_WAIT = 20.0  # seconds the callback view waits for the token exchange


class SignInNeeded(SignInRequired):
    """The server needs a person to sign in (no token, or the refresh token was refused)."""

    def __init__(self, server: str, user_id: int | None) -> None:
        super().__init__(server, f"{server} needs a sign-in")
        self.user_id = user_id


class SignInFailed(Exception):
    pass


# --- storage ------------------------------------------------------------------------------------


def _grant(server_id: int, user_id: int | None) -> McpOAuthGrant:
    # user_id None selects the shared grant (IS NULL), which the stubs do not allow for.
    grant, _ = McpOAuthGrant.objects.get_or_create(server_id=server_id, user_id=user_id)  # type: ignore[misc]
    return grant


def read_tokens(server_id: int, user_id: int | None) -> OAuthToken | None:
    # user_id None selects the shared grant (IS NULL), which the stubs do not allow for.
    grant = McpOAuthGrant.objects.filter(server_id=server_id, user_id=user_id).first()  # type: ignore[misc]
    if grant is None or not grant.tokens_encrypted:
        return None
    stored = json.loads(decrypt(grant.tokens_encrypted))
    tokens = OAuthToken.model_validate(stored["token"])
    if stored.get("expires_at") is not None:
        # The time left, so the provider refreshes a token that expired while it was stored.
        tokens.expires_in = max(0, int(stored["expires_at"] - time.time()))
    register_secret(tokens.access_token)
    register_secret(tokens.refresh_token)
    return tokens


def write_tokens(server_id: int, user_id: int | None, tokens: OAuthToken) -> None:
    grant = _grant(server_id, user_id)
    expires_at = time.time() + tokens.expires_in if tokens.expires_in is not None else None
    document = {"token": tokens.model_dump(mode="json", exclude_none=True), "expires_at": expires_at}
    grant.tokens_encrypted = encrypt(json.dumps(document))
    grant.state, grant.reason = McpOAuthGrant.State.SIGNED_IN, ""
    grant.save()


def read_client_info(server_id: int, user_id: int | None) -> OAuthClientInformationFull | None:
    # user_id None selects the shared grant (IS NULL), which the stubs do not allow for.
    grant = McpOAuthGrant.objects.filter(server_id=server_id, user_id=user_id).first()  # type: ignore[misc]
    if grant is None or not grant.client_info_encrypted:
        return None
    info = OAuthClientInformationFull.model_validate_json(decrypt(grant.client_info_encrypted))
    register_secret(info.client_secret)
    return info


def write_client_info(server_id: int, user_id: int | None, info: OAuthClientInformationFull) -> None:
    grant = _grant(server_id, user_id)
    grant.client_info_encrypted = encrypt(info.model_dump_json(exclude_none=True))
    grant.save(update_fields=["client_info_encrypted", "updated_at"])


def mark_sign_in_needed(server_id: int, user_id: int | None, reason: str) -> None:
    grant = _grant(server_id, user_id)
    grant.state, grant.reason = McpOAuthGrant.State.SIGN_IN_NEEDED, reason[:300]
    grant.tokens_encrypted = ""
    grant.save(update_fields=["state", "reason", "tokens_encrypted", "updated_at"])


def _closing(fn):
    """Run ``fn`` in a worker thread and close that thread's connection after it: grant reads and
    writes are rare (a sign-in, a refresh), and the executor's threads must not keep connections."""

    def run(*args):
        try:
            return fn(*args)
        finally:
            db_connection.close()

    return sync_to_async(run, thread_sensitive=False)


class GrantStorage:
    """The SDK's ``TokenStorage`` on one grant row (async methods, the ORM through a thread)."""

    def __init__(self, server_id: int, user_id: int | None) -> None:
        self.server_id = server_id
        self.user_id = user_id

    async def get_tokens(self) -> OAuthToken | None:
        return await _closing(read_tokens)(self.server_id, self.user_id)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await _closing(write_tokens)(self.server_id, self.user_id, tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return await _closing(read_client_info)(self.server_id, self.user_id)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await _closing(write_client_info)(self.server_id, self.user_id, client_info)


# --- who must sign in before a run goes on ----------------------------------------------------


def sign_ins_needed(
    user_id: int,
    switched_off: set[str] | frozenset = frozenset(),
    only: set[str] | None = None,
    servers: list[McpServer] | None = None,
) -> list[dict]:
    """The OAuth servers a run of ``user_id`` waits for: each "each user signs in" server this user
    has no valid grant for, and each "one connection for everyone" server whose grant is not valid
    (only an admin can sign that one in). Servers the conversation switched off are not waited for;
    ``only`` narrows the answer to these servers. ``servers``: the rows, already read, to pick from."""
    needed = []
    if servers is None:
        servers = list(McpServer.objects.filter(enabled=True).exclude(auth_mode=McpServer.AuthMode.NONE))
    oauth = [s for s in servers if s.enabled and s.auth_mode != McpServer.AuthMode.NONE]
    for server in [s for s in oauth if (only is None or s.name in only) and s.name not in switched_off]:
        per_user = server.auth_mode == McpServer.AuthMode.PER_USER
        owner = user_id if per_user else None  # None: the shared grant (IS NULL)
        signed_in = McpOAuthGrant.objects.filter(  # type: ignore[misc]
            server=server, user_id=owner, state=McpOAuthGrant.State.SIGNED_IN
        ).exists()
        if not signed_in:
            needed.append({"id": server.id, "name": server.name, "by": "you" if per_user else "admin"})
    return needed


def resume_waiting(user_id: int | None) -> list[int]:
    """Re-queue the runs that waited for a sign-in (this user's; every one after an admin's sign-in
    for everyone), as an approval decision does: the worker checks again and parks them again if
    another sign-in is still missing."""
    from chatapp.models import Run

    waiting = Run.objects.filter(status=Run.Status.AWAITING_SIGN_IN, cancel_requested=False)
    if user_id is not None:
        waiting = waiting.filter(conversation__owner_id=user_id)
    return [run_id for run_id in waiting.values_list("pk", flat=True) if requeue(run_id)]


def requeue(run_id: int) -> bool:
    """Queue one run that waits for a sign-in again (False: it no longer waits)."""
    from django.db import transaction

    from chatapp.models import Run
    from chatapp.services.dispatch import enqueue_on_commit
    from chatapp.services.run_lifecycle import move_locked

    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.status != Run.Status.AWAITING_SIGN_IN or run.lease_owner:
            return False
        # A clean pause, not a crash (as after an approval): the poison count starts afresh.
        move_locked(run, Run.Status.QUEUED, deliveries=0)
        enqueue_on_commit(run.pk)
    return True


# --- the worker's side: use tokens, never sign in ---------------------------------------------------


def worker_auth(server: McpServer, user_id: int | None, redirect_uri: str):
    """The provider a worker uses: refreshes on its own; a needed sign-in marks the grant and raises
    ``SignInNeeded`` (the worker never waits for a person)."""
    grant_user = None if server.auth_mode == McpServer.AuthMode.SHARED else user_id

    async def needs_person(url: str) -> None:
        await _closing(mark_sign_in_needed)(
            server.id, grant_user, "the authorization server asked for a new sign-in"
        )
        raise SignInNeeded(server.name, grant_user)

    async def no_callback() -> AuthorizationCodeResult:
        raise SignInNeeded(server.name, grant_user)

    return oauth_provider(
        server.url,
        GrantStorage(server.id, grant_user),
        redirect_uri=redirect_uri,
        redirect_handler=needs_person,
        callback_handler=no_callback,
    )


# --- the web side: a person signs in ---------------------------------------------------------


@dataclass
class _Started:
    ready: threading.Event
    url: str | None = None
    state: str | None = None
    error: str | None = None


def _private_layer():
    """A channel layer instance of its own: channels_redis lets one event loop receive per instance,
    and a sign-in's thread and a callback view each wait on their own loop."""
    return channel_layers.make_backend(DEFAULT_CHANNEL_LAYER)


async def _close(layer) -> None:
    close = getattr(layer, "close_pools", None)
    if close is not None:
        await close()


def _group(state: str) -> str:
    return CALLBACK_GROUP.format(state=state)


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "clearloop", "version": "1"},
    },
}


async def _sign_in(server_url: str, storage: GrantStorage, redirect_uri: str, started: _Started) -> None:
    import httpx2

    layer = _private_layer()
    reply: dict[str, str] = {}

    async def redirect(url: str) -> None:
        state = parse_qs(urlparse(url).query).get("state", [""])[0]
        channel = await layer.new_channel()
        await layer.group_add(_group(state), channel)
        reply["channel"] = channel
        started.url, started.state = url, state
        started.ready.set()

    async def callback() -> AuthorizationCodeResult:
        message = await asyncio.wait_for(layer.receive(reply["channel"]), CODE_WAIT)
        reply["to"] = message["reply"]
        if message.get("error"):
            raise SignInFailed(f"the authorization server said: {message['error']}")
        return AuthorizationCodeResult(code=message["code"], state=message["state"])

    provider = oauth_provider(
        server_url, storage, redirect_uri=redirect_uri, redirect_handler=redirect, callback_handler=callback
    )
    outcome = "ok"
    try:
        # Any request to the server starts the flow: its 401 leads to discovery, registration,
        # the consent page and the token exchange; the answer to this request is not needed.
        async with httpx2.AsyncClient(auth=provider, timeout=30.0) as client:
            response = await client.post(
                server_url,
                json=INITIALIZE,
                headers={"Accept": "application/json, text/event-stream"},
            )
        if response.status_code in (401, 403):
            outcome = f"the server still refuses the token (HTTP {response.status_code})"
    except Exception as exc:  # noqa: BLE001 - any failure is the person's to read, not a crash
        log.info("MCP sign-in to %s failed: %s", server_url, exc)
        outcome = f"sign-in failed: {exc}"
    finally:
        if not started.ready.is_set():
            started.error = None if outcome == "ok" else outcome
            started.ready.set()
    if reply.get("to"):
        await layer.send(reply["to"], {"type": "mcp.oauth.done", "outcome": outcome})
    await _close(layer)


def start_sign_in(server: McpServer, user_id: int | None, redirect_uri: str) -> str | None:
    """Start a sign-in and return the consent-page URL and its state, or None when the stored
    tokens already work. Raises ``SignInFailed`` (discovery or registration failed, no answer)."""
    started = _Started(threading.Event())
    _forget_other_redirects(server.id, user_id, redirect_uri)
    storage = GrantStorage(server.id, user_id)
    thread = threading.Thread(
        target=lambda: asyncio.run(_sign_in(server.url, storage, redirect_uri, started)),
        name=f"mcp-sign-in-{server.name}",
        daemon=True,
    )
    thread.start()
    if not started.ready.wait(URL_WAIT):
        raise SignInFailed(f"{server.name}'s authorization server did not answer in time")
    if started.error:
        raise SignInFailed(started.error)
    return started.url


def _forget_other_redirects(server_id: int, user_id: int | None, redirect_uri: str) -> None:
    """A client registered for another redirect URI cannot sign in here: the authorization server
    would refuse our callback. That happens when a worker or a Test connection met the server
    before anyone signed in (the SDK registers before it asks for a person, with the worker's
    placeholder callback). Dropping it makes the SDK register again, with this callback."""
    info = read_client_info(server_id, user_id)
    if info is not None and redirect_uri not in [str(uri) for uri in info.redirect_uris or ()]:
        # user_id None selects the shared grant (IS NULL), which the stubs do not allow for.
        McpOAuthGrant.objects.filter(server_id=server_id, user_id=user_id).update(  # type: ignore[misc]
            client_info_encrypted=""
        )


def state_of(url: str) -> str:
    return parse_qs(urlparse(url).query).get("state", [""])[0]


async def _deliver(state: str, code: str, error: str) -> str:
    layer = _private_layer()
    try:
        reply = await layer.new_channel()
        await layer.group_send(
            _group(state),
            {"type": "mcp.oauth.code", "code": code, "state": state, "error": error, "reply": reply},
        )
        message = await asyncio.wait_for(layer.receive(reply), DONE_WAIT)
    except TimeoutError:
        return "the sign-in was not completed in time; try again"
    finally:
        await _close(layer)
    return message["outcome"]


def deliver_callback(state: str, code: str, error: str = "") -> str:
    """Route the authorization server's answer to the sign-in waiting for it; "ok" or the reason."""
    from asgiref.sync import async_to_sync

    return async_to_sync(_deliver)(state, code, error)
