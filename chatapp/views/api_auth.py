"""API key authentication for the REST and OpenAI-compatible APIs (docs/api.md).

``Authorization: Bearer clk_...`` only. A key anywhere in the URL is refused before anything else
(URLs end up in access logs, proxies and browser history): the request gets 400 and the key should be
revoked. Every failed check answers the same 401 "invalid API key"; an address with too many
failures in the current minute gets 429 with ``Retry-After`` whatever it sends.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja.security import HttpBearer

from chatapp.models import ApiKey
from chatapp.services import api_keys


class ApiError(Exception):
    """An API refusal rendered as ``{"error": {...}, "detail": ...}`` with its status."""

    def __init__(self, status: int, message: str, code: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.headers = headers or {}


INVALID = ApiError(
    401, "Invalid API key.", "invalid_api_key", {"WWW-Authenticate": 'Bearer realm="clearloop"'}
)


def client_address(request: HttpRequest) -> str:
    return (request.META.get("REMOTE_ADDR") or "unknown")[:64]


def refuse_key_in_url(request: HttpRequest) -> None:
    raw = request.get_full_path()
    if api_keys.KEY_IN_TEXT.search(raw) or any(
        k.lower() in ("api_key", "apikey", "key", "access_token") for k in request.GET
    ):
        raise ApiError(
            400,
            "API keys are accepted only in the Authorization header (Bearer), never in a URL: URLs are "
            "written to logs. If a real key was sent this way, revoke it.",
            "key_in_url",
        )


class KeyAuth(HttpBearer):
    """Who is calling: the key's owner, with the key's scopes (``request.auth`` is the ApiKey)."""

    def __call__(self, request: HttpRequest) -> Any:
        refuse_key_in_url(request)
        address = client_address(request)
        try:
            api_keys.check_address(address)
        except api_keys.TooManyFailures as exc:
            raise ApiError(
                429, str(exc) + " Try again later.", "rate_limited", {"Retry-After": str(exc.retry_after)}
            ) from None
        header = request.headers.get("Authorization", "")
        if not header:
            return None  # not a key request (the trace also takes the browser's session): 401 if nothing else
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            api_keys.note_failure(address)
            raise INVALID
        try:
            key = api_keys.authenticate(token.strip())
        except api_keys.InvalidKey:
            api_keys.note_failure(address)
            raise INVALID from None
        request.user = key.user
        return key

    def authenticate(self, request: HttpRequest, token: str) -> Any:  # pragma: no cover - __call__ does it
        raise NotImplementedError


def require_scope(request: HttpRequest, *scopes: str) -> None:
    """The key must hold one of ``scopes`` (a browser session, where an operation takes one, has them all)."""
    auth = getattr(request, "auth", None)  # set by django-ninja's authentication
    if not isinstance(auth, ApiKey):
        return
    held = set(auth.scopes or [])
    if not held & set(scopes):
        raise ApiError(
            403,
            f"This API key lacks the scope for this call (needs {' or '.join(scopes)}; it has "
            f"{', '.join(sorted(held)) or 'none'}).",
            "insufficient_scope",
        )
