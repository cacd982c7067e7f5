"""The language switch in the header: Django's set_language (cookie, safe redirect) plus the
person's own saved choice, so it comes back after logging out and on another browser."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST
from django.views.i18n import set_language as django_set_language

from chatapp.services import languages


@require_POST
def set_language(request: HttpRequest) -> HttpResponse:
    code = languages.supported(request.POST.get("language", ""))
    if code is None:
        return HttpResponseBadRequest(_("Unknown language."))
    response = django_set_language(request)
    languages.remember(request, code)
    return response
