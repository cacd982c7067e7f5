"""The UI language: the person's saved choice, else the browser's Accept-Language (LocaleMiddleware).

The choice is kept in two places on purpose: the user's row (so it follows them to another browser
and survives logging out) and their session (so no request pays a query to find it). Both are
written here only: ``remember`` when the switch is used, ``restore`` when someone logs in.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.utils import translation

from chatapp.models import UserPreference

SESSION_KEY = "clearloop_language"


def supported(code: str) -> str | None:
    """The configured language ``code`` names, or None (never trust a posted code as is)."""
    codes = {c for c, _ in settings.LANGUAGES}
    code = (code or "").lower()
    return code if code in codes else None


def remember(request: HttpRequest, code: str) -> None:
    request.session[SESSION_KEY] = code
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        UserPreference.objects.update_or_create(user=user, defaults={"language": code})


def restore(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    """On login (a ``user_logged_in`` receiver): bring back what this person chose last time."""
    if request is None or not hasattr(request, "session"):
        return
    saved = UserPreference.objects.filter(user=user).values_list("language", flat=True).first()
    if saved and supported(saved):
        request.session[SESSION_KEY] = saved
        translation.activate(saved)
        request.LANGUAGE_CODE = saved  # as LocaleMiddleware sets it


def for_request(request: HttpRequest) -> str | None:
    session = getattr(request, "session", None)
    return supported(session.get(SESSION_KEY, "")) if session is not None else None


async def afor_request(request: HttpRequest) -> str | None:
    """for_request for the async middleware path: a request without a session cookie (the API's)
    costs no query; one with a session loads it once, as the sync path would."""
    session = getattr(request, "session", None)
    return supported(await session.aget(SESSION_KEY, "")) if session is not None else None
