"""Single sign-on glue (docs/sso.md): who may sign up, the roles a provider's claim grants, and the
provider to log out of. django-allauth does the protocol (discovery, state, PKCE S256, the code
exchange, ID token signature/issuer/audience/expiry checks).
"""

from __future__ import annotations

import logging
from typing import Any

import httpx
from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.signals import user_logged_in
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter, get_adapter
from django.conf import settings
from django.contrib.auth.models import Group, Permission
from django.db import transaction
from django.dispatch import receiver
from django.http import HttpRequest

from chatapp.access import AUDITORS

log = logging.getLogger(__name__)
SESSION_KEY = "clearloop_sso_provider"
APPROVERS = "approvers"


class ClosedSignupAdapter(DefaultAccountAdapter):
    """No local sign-up page: accounts come from an admin, or from a provider on first login."""

    def is_open_for_signup(self, request: HttpRequest) -> bool:
        return False


class SsoAdapter(DefaultSocialAccountAdapter):
    def is_open_for_signup(self, request: HttpRequest, sociallogin: Any) -> bool:
        return True  # users are created on their first login through a configured provider


def claim_values(data: dict[str, Any], claim: str) -> list[str]:
    value = data.get(claim)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value]
    return []


def roles_from(extra_data: dict[str, Any]) -> set[str]:
    claim = settings.OIDC_GROUPS_CLAIM
    if not claim:
        return set()
    values: list[str] = []
    for part in ("userinfo", "id_token"):
        values += claim_values((extra_data or {}).get(part) or {}, claim)
    return {settings.OIDC_ROLE_MAP[v] for v in values if v in settings.OIDC_ROLE_MAP}


@transaction.atomic
def apply_roles(user: Any, roles: set[str]) -> None:
    """The provider decides the mapped roles at every login: granted when the claim has them, taken
    away when it no longer does. Roles an admin grants by hand to unmapped groups are left alone."""
    auditors, _ = Group.objects.get_or_create(name=AUDITORS)
    approvers, created = Group.objects.get_or_create(name=APPROVERS)
    if created:
        approvers.permissions.add(Permission.objects.get(codename="approve_toolcall"))
    for role, group in (("auditors", auditors), ("approvers", approvers)):
        if role in roles:
            user.groups.add(group)
        else:
            user.groups.remove(group)
    user.__dict__.pop("_clearloop_is_auditor", None)  # access.is_auditor asks the groups again
    staff = bool(roles & {"staff", "approvers"})  # approving takes staff status (services.approvals)
    if user.is_staff != staff and not user.is_superuser:
        user.is_staff = staff
        user.save(update_fields=["is_staff"])


@receiver(user_logged_in)
def _sso_login(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    sociallogin = kwargs.get("sociallogin")
    if sociallogin is None:
        return
    apply_roles(user, roles_from(sociallogin.account.extra_data))
    request.session[SESSION_KEY] = sociallogin.account.provider


def login_buttons(request: HttpRequest) -> list[dict[str, str]]:
    from django.urls import reverse

    apps = get_adapter().list_apps(request, provider="openid_connect")
    return [
        {"name": app.name, "url": reverse("openid_connect_login", kwargs={"provider_id": app.provider_id})}
        for app in apps
    ]


def provider_origins(request: HttpRequest) -> list[str]:
    origins = []
    for app in get_adapter().list_apps(request, provider="openid_connect"):
        url = httpx.URL(app.settings.get("server_url", ""))
        if url.scheme in ("http", "https") and url.host:
            origins.append(f"{url.scheme}://{url.netloc.decode()}")
    return sorted(set(origins))


def end_session_url(request: HttpRequest, provider_id: str) -> str | None:
    """Where to send the browser so the provider ends its session too (RP-initiated logout), or None."""
    app = next(
        (
            a
            for a in get_adapter().list_apps(request, provider="openid_connect")
            if a.provider_id == provider_id
        ),
        None,
    )
    if app is None:
        return None
    server = app.settings.get("server_url", "").rstrip("/")
    if "/.well-known/" not in server:
        server += "/.well-known/openid-configuration"
    try:
        endpoint = httpx.get(server, timeout=5).raise_for_status().json().get("end_session_endpoint")
    except (httpx.HTTPError, ValueError):
        log.warning("SSO logout: the discovery document of %s could not be read", provider_id, exc_info=True)
        return None
    if not endpoint:
        return None
    back = request.build_absolute_uri(settings.LOGIN_URL if settings.LOGIN_URL.startswith("/") else "/login/")
    return str(httpx.URL(endpoint, params={"client_id": app.client_id, "post_logout_redirect_uri": back}))
