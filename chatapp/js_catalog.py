"""The JavaScript strings' translations, rendered once per language and served under a URL that names
their content, so a browser keeps them and never asks again.

Django's ``JavaScriptCatalog`` renders the catalogue from the .mo files on every request, and the
page's own scripts wait for it (it is a plain ``<script>`` before them): 12-32 ms of every page load on
an idle server, more on a busy one (``bench/page``, docs/performance.md session 24). Its output only
changes with the .mo files, which change only with a deploy (a restart), so each process renders it
once per language, and the page links ``/jsi18n/<language>/<hash of the body>.js``, cached for a
year. Django's docs suggest exactly this ("Note on performance" under the JavaScript catalogue).
``CatalogMiddleware`` answers that URL ahead of the session, locale and user middlewares, as
WhiteNoise does static files: the response varies on nothing (no ``Vary: Cookie`` to split caches)
and costs no session or user read.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import translation
from django.utils.cache import patch_cache_control
from django.views.i18n import JavaScriptCatalog

DOMAIN = "djangojs"
YEAR = 365 * 24 * 3600
VERSIONED = re.compile(r"/jsi18n/([\w-]+)/([0-9a-f]{16})\.js")  # chatapp/urls.py's versioned path


@dataclass(frozen=True)
class Catalog:
    body: bytes
    content_type: str
    version: str  # the first 16 hex digits of the body's SHA-256: in the URL, so a change is a new URL


_catalogs: dict[str, Catalog] = {}


class UnknownLanguage(Exception):
    pass


def language_of(code: str) -> str:
    """``code`` if the site offers it, else ``UnknownLanguage``: only offered languages are rendered
    (and kept), so the cache is as small as ``settings.LANGUAGES``."""
    if code not in dict(settings.LANGUAGES):
        raise UnknownLanguage(code)
    return code


def catalog(code: str) -> Catalog:
    code = language_of(code)
    found = _catalogs.get(code)
    if found is None:
        # Rendered twice at worst by two first requests at once; the result is the same.
        request = HttpRequest()
        request.method = "GET"
        with translation.override(code):
            response = JavaScriptCatalog.as_view(domain=DOMAIN)(request)
        assert isinstance(response, HttpResponse)  # a rendered template, never streamed
        body = response.content
        version = hashlib.sha256(body).hexdigest()[:16]
        found = _catalogs[code] = Catalog(body, response["Content-Type"], version)
    return found


def response_for(language: str, version: str = "") -> HttpResponse:
    """``language``'s catalogue; kept by the browser for a year when ``version`` is its current one
    (an old page's URL after a deploy gets today's catalogue, not to be kept)."""
    try:
        found = catalog(language)
    except UnknownLanguage:
        raise Http404("no such language") from None
    response = HttpResponse(found.body, content_type=found.content_type)
    if version == found.version:
        patch_cache_control(response, public=True, max_age=YEAR, immutable=True)
    else:
        patch_cache_control(response, no_cache=True)
    response["Content-Language"] = language
    return response


class CatalogMiddleware:
    """Serves the versioned catalogue URL before sessions and locale (settings.MIDDLEWARE)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        found = VERSIONED.fullmatch(request.path_info)
        if found is None or request.method not in ("GET", "HEAD"):
            return self.get_response(request)
        try:
            return response_for(found[1], found[2])
        except Http404:
            return self.get_response(request)  # the URL resolver's own 404 page
