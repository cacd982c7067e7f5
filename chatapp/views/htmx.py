"""``request.htmx`` (set by django-htmx's middleware) for the type checker: views that read it take an
``HtmxHttpRequest``, as the django-htmx docs recommend; helpers that get a plain request ask
``is_htmx``. ``api_key`` does the same for django-ninja's ``request.auth``."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def is_htmx(request: HttpRequest) -> bool:
    return bool(getattr(request, "htmx", False))


def api_key(request: HttpRequest) -> Any:
    """The ApiKey django-ninja's authentication put on the request (None for a browser session)."""
    return getattr(request, "auth", None)
