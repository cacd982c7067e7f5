"""The language a signed-in person chose wins over the browser's Accept-Language.

Django's LocaleMiddleware (before this one) picks the language from the cookie or Accept-Language;
this one, after authentication, applies the choice saved in the person's session
(chatapp.services.languages puts it there at login and when the switch is used). Under ASGI the
whole chain runs async, so both paths apply it; the async one reads the session with its async API.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse
from django.utils import translation

from chatapp.services import languages


class UserLanguageMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponse | Awaitable[HttpResponse]:
        if self.is_async:
            return self.__acall__(request)
        chosen = languages.for_request(request)
        _apply(request, chosen)
        return _label(self.get_response(request), chosen)

    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        chosen = await languages.afor_request(request)
        _apply(request, chosen)
        return _label(await self.get_response(request), chosen)


def _apply(request: HttpRequest, chosen: str | None) -> None:
    if chosen:
        translation.activate(chosen)
        request.LANGUAGE_CODE = chosen


def _label(response: HttpResponse, chosen: str | None) -> HttpResponse:
    if chosen:
        response.headers["Content-Language"] = chosen
    return response
