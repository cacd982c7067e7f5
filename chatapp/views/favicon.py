"""``/favicon.ico``: browsers ask for it on pages that name no icon (the admin's, a JSON answer); it
sends them to the app's icon rather than a 404 in every console."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponsePermanentRedirect
from django.templatetags.static import static


def favicon(_request: HttpRequest) -> HttpResponsePermanentRedirect:
    return HttpResponsePermanentRedirect(static("favicon.svg"))
