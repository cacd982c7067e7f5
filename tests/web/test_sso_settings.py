"""Issue 13 item 1 without a browser: provider settings from the environment, role mapping (granted
and taken away), the password switch, the login page's CSP, and allauth's pages that are not used."""

from __future__ import annotations

import json

import pytest
from allauth.socialaccount.models import SocialApp
from django.contrib.auth.models import Group
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from chatapp import sso
from chatapp.sso_settings import oidc_apps, role_map

pytestmark = pytest.mark.django_db


def test_providers_from_the_environment(monkeypatch):
    monkeypatch.setenv("CORP_SECRET", "from-env")
    monkeypatch.setenv("CLEARLOOP_OIDC_PROVIDERS", json.dumps([
        {"id": "corp", "name": "Corp", "server_url": "https://id.corp.example", "client_id": "c1",
         "secret_env": "CORP_SECRET"},
        {"id": "partner", "name": "Partner", "server_url": "https://id.partner.example/realms/x",
         "client_id": "c2", "secret": "inline", "scope": ["openid", "email"]},
    ]))
    apps = oidc_apps("groups")
    assert [a["provider_id"] for a in apps] == ["corp", "partner"]
    assert apps[0]["secret"] == "from-env" and apps[0]["settings"]["oauth_pkce_enabled"] is True
    assert "groups" in apps[0]["settings"]["scope"] and apps[1]["settings"]["scope"] == ["openid", "email"]


@pytest.mark.parametrize("value, reason", [
    ("not json", "not valid JSON"),
    ('{"id": "x"}', "JSON list"),
    ('[{"id": "x", "name": "X", "server_url": "https://x"}]', "lacks client_id"),
    ('[{"id": "Bad Id", "name": "X", "server_url": "https://x", "client_id": "c", "secret": "s"}]', "lowercase"),
    ('[{"id": "x", "name": "X", "server_url": "https://x", "client_id": "c", "secret_env": "NOPE_UNSET"}]',
     "secret is empty"),
])
def test_bad_provider_settings_stop_the_start_with_the_reason(monkeypatch, value, reason):
    monkeypatch.delenv("NOPE_UNSET", raising=False)
    monkeypatch.setenv("CLEARLOOP_OIDC_PROVIDERS", value)
    with pytest.raises(ImproperlyConfigured, match=reason):
        oidc_apps("groups")


def test_role_map_refuses_unknown_roles(monkeypatch):
    monkeypatch.setenv("CLEARLOOP_OIDC_ROLE_MAP", '{"admins": "superuser"}')
    with pytest.raises(ImproperlyConfigured, match="auditors, approvers, staff"):
        role_map()


def test_roles_follow_the_claim_at_every_login(cast, settings):
    settings.OIDC_GROUPS_CLAIM = "groups"
    settings.OIDC_ROLE_MAP = {"audit": "auditors", "approve": "approvers", "ops": "staff"}
    bob = cast["bob"]
    handmade = Group.objects.create(name="handmade")
    bob.groups.add(handmade)
    sso.apply_roles(bob, sso.roles_from({"userinfo": {"groups": ["approve", "audit", "other"]}}))
    bob.refresh_from_db()
    assert bob.is_staff and set(bob.groups.values_list("name", flat=True)) == {"approvers", "auditors", "handmade"}
    assert bob.has_perm("chatapp.approve_toolcall")
    sso.apply_roles(bob, sso.roles_from({"id_token": {"groups": "ops"}}))  # a single string works too
    bob = type(bob).objects.get(pk=bob.pk)
    assert bob.is_staff and set(bob.groups.values_list("name", flat=True)) == {"handmade"}
    sso.apply_roles(bob, sso.roles_from({"userinfo": {}}))
    bob.refresh_from_db()
    assert not bob.is_staff  # taken away when the claim no longer grants it


def _app(server_url: str = "https://id.corp.example/realm") -> SocialApp:
    return SocialApp.objects.create(provider="openid_connect", provider_id="corp", name="Corp SSO",
                                    client_id="c", secret="s", settings={"server_url": server_url})


def test_login_page_has_the_button_and_lets_its_form_reach_the_provider(cast):
    _app()
    page = Client().get("/login/")
    html = page.content.decode()
    assert "Sign in with Corp SSO" in html and 'action="/accounts/oidc/corp/login/"' in html
    assert 'data-role="password-login"' in html
    form_action = [d for d in page["Content-Security-Policy"].split(";") if "form-action" in d][0]
    assert "https://id.corp.example" in form_action and "'self'" in form_action


def test_password_login_can_be_switched_off(cast, settings):
    settings.PASSWORD_LOGIN = False
    _app()
    page = Client().get("/login/").content.decode()
    assert "Sign in with Corp SSO" in page and 'data-role="password-login"' not in page
    refused = Client().post("/login/", {"username": "alice", "password": "alice-pass"})
    assert refused.status_code == 403 and "Password login is switched off" in refused.content.decode()
    assert "_auth_user_id" not in Client().session


def test_allauth_pages_we_do_not_use(cast):
    client = Client()
    assert client.get("/accounts/signup/").status_code == 302
    assert client.get("/accounts/login/")["Location"].endswith("/login/")
    assert client.get("/accounts/password/reset/").status_code == 404
    assert client.get("/accounts/oidc/nosuch/login/").status_code in (404, 405)


def test_a_provider_that_is_down_gives_a_clear_page_not_a_500(cast):
    _app("http://127.0.0.1:9/")  # nothing listens on the discard port
    answer = Client().post("/accounts/oidc/corp/login/")
    assert answer.status_code == 502 and "cannot be reached" in answer.content.decode()


def test_a_callback_with_a_forged_state_logs_nobody_in(cast):
    _app("http://127.0.0.1:9/")
    client = Client()
    answer = client.get("/accounts/oidc/corp/login/callback/", {"code": "stolen-code", "state": "forged"})
    assert "did not complete" in answer.content.decode()
    assert "_auth_user_id" not in client.session
    from django.contrib.auth import get_user_model

    assert get_user_model().objects.count() == 4  # the cast only: nobody was created
