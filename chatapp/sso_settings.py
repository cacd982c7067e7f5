"""Single sign-on settings from the environment (docs/sso.md), turned into django-allauth's.

``CLEARLOOP_OIDC_PROVIDERS`` is a JSON list; each provider is an object with ``id`` (a slug, in the
callback URL ``/accounts/oidc/<id>/login/callback/``), ``name`` (the button's label), ``server_url``
(the issuer; its ``/.well-known/openid-configuration`` is read), ``client_id``, and the client secret
as ``secret_env`` (the name of an environment variable holding it) or ``secret``; optional ``scope``
(default openid, profile, email, and groups when a groups claim is mapped). Providers can also be added
in the admin (Social applications, provider "OpenID Connect", settings ``{"server_url": ...}``).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from django.core.exceptions import ImproperlyConfigured

_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
DEFAULT_ROLE_MAP = {
    "clearloop-auditors": "auditors",
    "clearloop-approvers": "approvers",
    "clearloop-staff": "staff",
}
ROLES = ("auditors", "approvers", "staff")


def _json(name: str, default: Any) -> Any:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} is not valid JSON: {exc}") from None


def oidc_apps(groups_claim: str) -> list[dict[str, Any]]:
    providers = _json("CLEARLOOP_OIDC_PROVIDERS", [])
    if not isinstance(providers, list):
        raise ImproperlyConfigured("CLEARLOOP_OIDC_PROVIDERS must be a JSON list of providers.")
    apps = []
    for index, p in enumerate(providers):
        where = f"CLEARLOOP_OIDC_PROVIDERS[{index}]"
        if not isinstance(p, dict):
            raise ImproperlyConfigured(f"{where} must be an object.")
        missing = [k for k in ("id", "name", "server_url", "client_id") if not p.get(k)]
        if missing:
            raise ImproperlyConfigured(f"{where} lacks {', '.join(missing)}.")
        if not _SLUG.match(p["id"]):
            raise ImproperlyConfigured(
                f"{where}.id must be lowercase letters, digits, _ and - (got {p['id']!r})."
            )
        secret = os.environ.get(p["secret_env"], "") if p.get("secret_env") else p.get("secret", "")
        if not secret:
            raise ImproperlyConfigured(
                f"{where}: the client secret is empty (set secret_env to a variable that holds it)."
            )
        scope = p.get("scope") or [
            "openid",
            "profile",
            "email",
            *(["groups"] if groups_claim == "groups" else []),
        ]
        apps.append(
            {
                "provider_id": p["id"],
                "name": p["name"],
                "client_id": p["client_id"],
                "secret": secret,
                "settings": {"server_url": p["server_url"], "oauth_pkce_enabled": True, "scope": scope},
            }
        )
    return apps


def role_map() -> dict[str, str]:
    mapping = _json("CLEARLOOP_OIDC_ROLE_MAP", DEFAULT_ROLE_MAP)
    if not isinstance(mapping, dict) or any(v not in ROLES for v in mapping.values()):
        raise ImproperlyConfigured(
            f"CLEARLOOP_OIDC_ROLE_MAP must map claim values to roles ({', '.join(ROLES)})."
        )
    return {str(k): str(v) for k, v in mapping.items()}
