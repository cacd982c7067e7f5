"""The HTTP API: one django-ninja instance for the native REST API (``/api/...``) and the
OpenAI-compatible API (``/v1/...``); its OpenAPI document is generated from these functions and their
pydantic schemas and served at ``/api/schema``, with a browsable page at ``/api/docs``.

Errors have one shape, readable by OpenAI clients and plain HTTP clients alike:
``{"error": {"message", "type", "code"}, "detail": message}``.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, ValidationError

from chatapp.services.errors import ChatError
from chatapp.services.limits import LimitReached
from chatapp.views.api_auth import INVALID, ApiError, KeyAuth


def error_response(
    status: int, message: str, code: str, headers: dict[str, str] | None = None
) -> HttpResponse:
    kind = {
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        429: "rate_limit_error",
    }
    body = {"error": {"message": message, "type": kind.get(status, "invalid_request_error"), "code": code}}
    response = JsonResponse({**body, "detail": message}, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


api = NinjaAPI(
    title="clearloop API",
    version="1",
    description=(
        "The native REST API and the OpenAI-compatible API of clearloop. Authenticate with a personal "
        "API key (`Authorization: Bearer clk_...`), created on the API keys page or with "
        "`manage.py apikey create`. See docs/api.md."
    ),
    auth=KeyAuth(),
    openapi_url="/api/schema",
    docs_url="/api/docs",
    urls_namespace="api",
)


@api.exception_handler(ApiError)
def _api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
    return error_response(exc.status, exc.message, exc.code, exc.headers)


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: Exception) -> HttpResponse:
    return error_response(INVALID.status, INVALID.message, INVALID.code, INVALID.headers)


@api.exception_handler(LimitReached)
def _limit(request: HttpRequest, exc: LimitReached) -> HttpResponse:
    return error_response(429, str(exc), "limit_reached", {"Retry-After": "60"})


@api.exception_handler(ChatError)
def _refused(request: HttpRequest, exc: ChatError) -> HttpResponse:
    return error_response(422, str(exc), "refused")


@api.exception_handler(PermissionDenied)
def _denied(request: HttpRequest, exc: PermissionDenied) -> HttpResponse:
    return error_response(403, str(exc) or "Not allowed.", "permission_denied")


@api.exception_handler(Http404)
def _missing(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error_response(404, str(exc) or "Not found.", "not_found")


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    parts = [f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in exc.errors]
    return error_response(422, "The request is not valid: " + "; ".join(parts), "invalid_request")


def _register() -> None:
    from chatapp.views import openai_api, rest_api

    api.add_router("/api", rest_api.router)
    api.add_router("/v1", openai_api.router)


_register()
