"""The JavaScript translation catalogue (``chatapp/js_catalog.py``). The versioned URL is normally
answered by ``CatalogMiddleware`` before it gets here; this view serves it without the middleware and
serves the plain ``/jsi18n/`` (the active language's, not to be kept)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.views.decorators.http import require_GET

from chatapp.js_catalog import response_for


@require_GET
def javascript_catalog(request: HttpRequest, language: str = "", version: str = "") -> HttpResponse:
    return response_for(language or translation.get_language(), version)
