"""Choosing a model: one explicit default (an admin flag, exactly one), nothing becomes the default by
being added, the menu applies on change and names what "Default" is, the home page offers the demo's
scenarios."""

from __future__ import annotations

import pytest
from django.test import Client

from chatapp.models import Conversation, ProviderConfig
from chatapp.services.errors import ProviderUnavailable
from chatapp.services.providers import default_provider, ensure_env_providers


@pytest.fixture
def alice(cast):
    client = Client()
    client.force_login(cast["alice"])
    return client


def provider(name: str, **extra) -> ProviderConfig:
    return ProviderConfig.objects.create(
        name=name, base_url="http://127.0.0.1:9/v1", model=f"{name}-m", **extra
    )


def test_adding_a_provider_does_not_make_it_the_default(db, settings):
    ensure_env_providers()
    provider("aaa-first-by-name")
    assert default_provider().name == "demo"


def test_the_flag_moves_and_only_one_provider_holds_it(db):
    one = provider("one", is_default=True)
    two = provider("two")
    assert default_provider() == one
    two.is_default = True
    two.save()
    assert list(ProviderConfig.objects.filter(is_default=True)) == [two]
    assert default_provider() == two


def test_a_disabled_default_is_refused_with_the_reason(db):
    provider("off", is_default=True, enabled=False)
    with pytest.raises(ProviderUnavailable, match="default model .* is disabled"):
        default_provider()


def test_the_env_setting_names_the_default_explicitly(db, settings):
    provider("envdefault")
    settings.DEFAULT_PROVIDER = "envdefault"
    assert default_provider().name == "envdefault"


def test_without_demo_or_a_flag_sends_are_refused_with_what_to_do(db, settings):
    settings.DEMO_MODE = settings.DEBUG = False
    provider("lonely")
    with pytest.raises(ProviderUnavailable, match="No default model is set"):
        default_provider()


def test_the_menu_names_the_default_and_applies_on_change(alice, cast):
    convo = Conversation.objects.create(owner=cast["alice"])
    other = provider("other", label="Other model")
    page = alice.get(f"/c/{convo.pk}/").content.decode()
    assert "Default: Demo model (demo model) · clearloop-demo" in page
    response = alice.post(f"/c/{convo.pk}/settings/", {"provider": "other"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert "Saved: the next answer uses Other model · other-m." in response.content.decode()
    assert Conversation.objects.get(pk=convo.pk).provider == other
    refused = alice.post(
        f"/c/{convo.pk}/settings/", {"provider": "other", "model": "nope"}, HTTP_HX_REQUEST="true"
    )
    assert refused.status_code == 422 and "is not offered by Other model" in refused.content.decode()


def test_the_home_page_offers_the_seed_scenarios_in_demo_mode(alice, settings):
    settings.DEMO_MODE = True
    page = alice.get("/").content.decode()
    assert 'data-role="welcome"' in page and "查询最新注册的两个用户" in page
    settings.DEMO_MODE = False
    assert "查询最新注册的两个用户" not in alice.get("/").content.decode()
