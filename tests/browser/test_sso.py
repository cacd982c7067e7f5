"""Issue 13 item 1 in the browser, against a real OpenID provider (panva/oidc-provider, OpenID
Certified) running here: login through its pages, users created on first login, roles mapped from the
groups claim, logout at the provider, and password login still working when the provider is down."""

from __future__ import annotations

import pytest
from allauth.socialaccount.models import SocialAccount, SocialApp
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from tests.integration.stack import free_port
from tests.oidc import provider as idp

pytestmark = pytest.mark.django_db(transaction=True)

ACCOUNTS = {
    "carol": {"preferred_username": "carol", "email": "carol@example.org", "name": "Carol",
              "groups": ["clearloop-auditors", "unrelated"]},
    "dave": {"preferred_username": "dave", "email": "dave@example.org", "name": "Dave",
             "groups": ["clearloop-approvers"]},
    "erin": {"preferred_username": "erin", "email": "erin@example.org", "name": "Erin", "groups": []},
}


@pytest.fixture
def oidc(live_stack, tmp_path):
    port = free_port()
    callback = f"{live_stack.base_url}/accounts/oidc/localidp/login/callback/"
    clients = [{"client_id": "clearloop", "client_secret": "s3cret-for-tests", "redirect_uris": [callback],
                "post_logout_redirect_uris": [f"{live_stack.base_url}/login/"]}]
    running = idp.start(port, clients, ACCOUNTS, tmp_path / "oidc.log")
    try:
        # Configured in the admin's table (the env route is CLEARLOOP_OIDC_PROVIDERS, same settings).
        SocialApp.objects.create(
            provider="openid_connect", provider_id="localidp", name="Local IdP", client_id="clearloop",
            secret="s3cret-for-tests",
            settings={"server_url": running.issuer, "oauth_pkce_enabled": True,
                      "scope": ["openid", "profile", "email", "groups"]},
        )
        yield running
    finally:
        running.stop()  # also when the setup above fails: no provider process is left behind


def sso_login(page, login: str, base_url: str) -> None:
    page.goto("/login/")
    page.click("text=Sign in with Local IdP")
    page.wait_for_url(lambda url: "/interaction/" in url, wait_until="domcontentloaded")
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any")
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/interaction/" in url, wait_until="domcontentloaded")  # the provider's consent page
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: url.startswith(base_url) and "/accounts/" not in url)


def test_sso_login_creates_the_user_maps_roles_and_logs_out_at_the_provider(oidc, browser, live_stack):
    context = browser.new_context(base_url=live_stack.base_url)
    page = context.new_page()
    page.goto("/login/")
    expect(page.locator("[data-role=password-login]")).to_be_visible()  # beside the SSO button
    sso_login(page, "carol", live_stack.base_url)
    expect(page).to_have_url(f"{live_stack.base_url}/audit/")  # an auditor lands on the audit pages
    carol = get_user_model().objects.get(username="carol")
    assert carol.email == "carol@example.org" and not carol.has_usable_password()
    assert list(carol.groups.values_list("name", flat=True)) == ["auditors"]
    account = SocialAccount.objects.get(user=carol)
    assert account.provider == "localidp" and account.uid == "carol"

    # Log out: clearloop's session ends, then the provider's (its own confirmation page), then back.
    page.click("text=Log out")
    page.wait_for_url(lambda url: "/session/end" in url, wait_until="domcontentloaded")
    page.click("button[name=logout][value=yes]")
    page.wait_for_url(f"{live_stack.base_url}/login/")
    # The provider forgot the session: signing in again asks for the login.
    page.click("text=Sign in with Local IdP")
    page.wait_for_url(lambda url: "/interaction/" in url, wait_until="domcontentloaded")
    expect(page.locator("input[name=login]")).to_be_visible()
    context.close()


def test_sso_approver_role_and_second_login_keeps_one_user(oidc, browser, live_stack):
    for _ in range(2):
        context = browser.new_context(base_url=live_stack.base_url)
        page = context.new_page()
        sso_login(page, "dave", live_stack.base_url)
        expect(page.locator(".who")).to_have_text("dave")
        context.close()
    dave = get_user_model().objects.get(username="dave")
    assert get_user_model().objects.filter(username__startswith="dave").count() == 1
    assert dave.is_staff and dave.has_perm("chatapp.approve_toolcall")
    assert not dave.groups.filter(name="auditors").exists()


def test_password_login_works_while_the_provider_is_down(oidc, browser, live_stack, cast):
    oidc.stop()
    context = browser.new_context(base_url=live_stack.base_url)
    page = context.new_page()
    page.goto("/login/")
    page.click("text=Sign in with Local IdP")
    expect(page.locator("[data-role=sso-error]")).to_contain_text("did not complete")
    page.goto("/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-pass")
    page.click("[data-role=password-login] button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)
    expect(page.locator(".who")).to_have_text("alice")
    context.close()
