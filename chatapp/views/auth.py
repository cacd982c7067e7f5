"""Log in (password form and single sign-on buttons) and log out (here and at the provider)."""

from __future__ import annotations

import logging
from typing import Any

import requests
from allauth.socialaccount.providers.openid_connect import views as oidc_views
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext_lazy

from chatapp import sso

PASSWORD_OFF = gettext_lazy("Password login is switched off here; sign in with your organisation's account.")


def _allow_forms_to_providers(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """The SSO buttons POST here and are redirected to the provider: CSP's form-action covers the
    redirects of a form submission, so this page (only) lists the providers' origins there too."""
    origins = sso.provider_origins(request)
    if origins:
        config: dict[str, Any] = {**settings.SECURE_CSP}
        config["form-action"] = [*config.get("form-action", []), *origins]
        # Django 6's CSP middleware reads a per-response override from this attribute.
        setattr(response, "_csp_config", config)  # noqa: B010
    return response


class LoginView(auth_views.LoginView):
    def get(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        return _allow_forms_to_providers(request, super().get(request, *args, **kwargs))

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["sso_buttons"] = sso.login_buttons(self.request)
        context["password_login"] = settings.PASSWORD_LOGIN
        return context

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not settings.PASSWORD_LOGIN:
            refused = render(
                request,
                "registration/login.html",
                {
                    "sso_buttons": sso.login_buttons(request),
                    "password_login": False,
                    "error": PASSWORD_OFF,
                },
                status=403,
            )
            return _allow_forms_to_providers(request, refused)
        return _allow_forms_to_providers(request, super().post(request, *args, **kwargs))


class LogoutView(auth_views.LogoutView):
    """After the local logout, a user who came through a provider is sent to its end-session page."""

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        provider_id = request.session.get(sso.SESSION_KEY)
        response = super().post(request, *args, **kwargs)
        if provider_id:
            target = sso.end_session_url(request, provider_id)
            if target:
                # A page of ours that moves on to the provider: a redirect from the logout form to
                # another origin would be blocked by CSP form-action on every page that has the form.
                return render(request, "registration/sso_logout.html", {"target": target})
        return response


def _provider_unreachable(request: HttpRequest, provider_id: str) -> HttpResponse:
    logging.getLogger(__name__).warning("SSO: provider %s unreachable", provider_id, exc_info=True)
    return render(request, "socialaccount/authentication_error.html", {"unreachable": True}, status=502)


def sso_login(request: HttpRequest, provider_id: str) -> HttpResponse:
    """allauth's start of the flow, with a provider that cannot be reached shown as such (its
    discovery document is read here); the password form keeps working meanwhile."""
    try:
        return oidc_views.login(request, provider_id)
    except requests.RequestException:
        return _provider_unreachable(request, provider_id)


def sso_callback(request: HttpRequest, provider_id: str) -> HttpResponse:
    try:
        return oidc_views.callback(request, provider_id)
    except requests.RequestException:
        return _provider_unreachable(request, provider_id)
