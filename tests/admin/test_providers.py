"""Providers in the admin: the write-only API key and the "send a test request" action (R-UI-3)."""

from __future__ import annotations

import html

import pytest

from chatapp.models import ProviderConfig
from chatapp.secrets import decrypt

SECRET = "sk-admin-test-0123456789abcdefSECRET"
CHANGELIST = "/admin/chatapp/providerconfig/"


def provider(base_url: str, **kw) -> ProviderConfig:
    values = {
        "name": "demo-test",
        "label": "Demo model",
        "kind": "openai_chat",
        "preset": "demo",
        "base_url": base_url,
        "model": "clearloop-demo",
        "is_demo": True,
    }
    values.update(kw)
    return ProviderConfig.objects.create(**values)


def form_data(**overrides) -> dict:
    data = {
        "name": "acme",
        "label": "Acme",
        "kind": "openai_chat",
        "preset": "openai",
        "base_url": "https://llm.example.com/v1",
        "model": "acme-1",
        "api_key": "",
        "api_key_env": "",
        "context_window": "128000",
        "max_output_tokens": "4096",
        "extra_headers": "{}",
        "capability_overrides": "{}",
        "extra_body": "{}",
        "reasoning_effort": "",
        "thinking": "",
        "thinking_budget": "",
        "idle_timeout": "",
        "total_timeout": "",
        "max_retries": "2",
        "enabled": "on",
        # The price table inline (none unless a test adds rows).
        "prices-TOTAL_FORMS": "0",
        "prices-INITIAL_FORMS": "0",
    }
    data.update(overrides)
    return data


def page_messages(response) -> str:
    """The page as text, lower-cased (the admin capitalises messages)."""
    return html.unescape(response.content.decode()).lower()


def test_it_sends_a_test_request_to_the_demo_model(login, demo_model_url):
    config = provider(demo_model_url)
    client = login("ada")
    response = client.post(
        CHANGELIST, {"action": "send_test_request", "_selected_action": [config.pk]}, follow=True
    )
    assert response.status_code == 200
    text = page_messages(response)
    assert "demo-test: answered in" in text
    assert "model clearloop-demo" in text


def test_the_change_page_button_tests_one_provider(login, demo_model_url):
    config = provider(demo_model_url)
    client = login("ada")
    page = client.get(f"{CHANGELIST}{config.pk}/change/")
    assert f'action="{CHANGELIST}{config.pk}/test/"' in page.content.decode()
    response = client.post(f"{CHANGELIST}{config.pk}/test/", follow=True)
    assert response.redirect_chain[-1][0] == f"{CHANGELIST}{config.pk}/change/"
    assert "demo-test: answered in" in page_messages(response)
    assert client.get(f"{CHANGELIST}{config.pk}/test/").status_code == 405


def test_a_dead_endpoint_shows_the_error_class_and_message(login, dead_url):
    config = provider(dead_url, name="dead")
    response = login("ada").post(
        CHANGELIST, {"action": "send_test_request", "_selected_action": [config.pk]}, follow=True
    )
    text = page_messages(response)
    assert "dead: the test request failed: transientupstream:" in text
    assert "answered in" not in text


def test_the_api_key_is_write_only(login, demo_model_url):
    client = login("ada")
    response = client.post(f"{CHANGELIST}add/", form_data(api_key=SECRET))
    assert response.status_code == 302, response.content.decode()[:2000]
    config = ProviderConfig.objects.get(name="acme")
    assert config.api_key_encrypted and SECRET not in config.api_key_encrypted
    assert decrypt(config.api_key_encrypted) == SECRET

    # Blank keeps the stored key.
    response = client.post(f"{CHANGELIST}{config.pk}/change/", form_data(label="Acme 2"))
    assert response.status_code == 302
    config.refresh_from_db()
    assert config.label == "Acme 2"
    assert decrypt(config.api_key_encrypted) == SECRET

    # No page shows it, not even after a test request made with it.
    config.base_url = demo_model_url
    config.preset = "demo"
    config.save()
    pages = [
        client.get(CHANGELIST),
        client.get(f"{CHANGELIST}{config.pk}/change/"),
        client.post(
            CHANGELIST, {"action": "send_test_request", "_selected_action": [config.pk]}, follow=True
        ),
        client.post(f"{CHANGELIST}{config.pk}/test/", follow=True),
    ]
    for page in pages:
        body = page.content.decode()
        assert SECRET not in body
        assert config.api_key_encrypted not in body
    change_page = pages[1].content.decode()
    assert "set (encrypted, not shown)" in change_page
    assert "answered in" in page_messages(pages[2])


def test_a_stored_key_can_be_removed_and_env_named_instead(login):
    client = login("ada")
    client.post(f"{CHANGELIST}add/", form_data(api_key=SECRET))
    config = ProviderConfig.objects.get(name="acme")
    response = client.post(
        f"{CHANGELIST}{config.pk}/change/", form_data(clear_api_key="on", api_key_env="ACME_API_KEY")
    )
    assert response.status_code == 302
    config.refresh_from_db()
    assert config.api_key_encrypted == ""
    assert config.api_key_env == "ACME_API_KEY"
    assert "env ACME_API_KEY" in client.get(CHANGELIST).content.decode()


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"preset": "nonsense"}, "unknown provider preset"),
        ({"preset": "anthropic"}, "is for anthropic providers"),
        ({"capability_overrides": '{"teleport": true}'}, "unknown capability override"),
    ],
)
def test_it_rejects_a_provider_that_cannot_be_built(login, overrides, error):
    response = login("ada").post(f"{CHANGELIST}add/", form_data(**overrides))
    assert response.status_code == 200
    assert error in html.unescape(response.content.decode())
    assert not ProviderConfig.objects.filter(name="acme").exists()


def test_staff_without_provider_permissions_cannot_test(login, demo_model_url):
    config = provider(demo_model_url)
    client = login("stan")
    assert client.post(f"{CHANGELIST}{config.pk}/test/").status_code == 403
    assert client.get(CHANGELIST).status_code == 403


def test_secret_extra_headers_are_masked_and_kept(login):
    client = login("ada")
    client.post(
        f"{CHANGELIST}add/", form_data(extra_headers='{"X-Api-Key": "hdr-secret-value-42", "X-Org": "acme"}')
    )
    config = ProviderConfig.objects.get(name="acme")
    body = client.get(f"{CHANGELIST}{config.pk}/change/").content.decode()
    assert "hdr-secret-value-42" not in body and "acme" in body
    response = client.post(
        f"{CHANGELIST}{config.pk}/change/",
        form_data(extra_headers='{"X-Api-Key": "********", "X-Org": "acme-2"}'),
    )
    assert response.status_code == 302
    config.refresh_from_db()
    assert config.extra_headers == {"X-Api-Key": "hdr-secret-value-42", "X-Org": "acme-2"}


@pytest.mark.parametrize(
    ("overrides", "field", "error"),
    [
        ({"extra_body": '["thinking"]'}, "extra_body", "the extra body must be a json object, not an array"),
        ({"extra_body": '"disabled"'}, "extra_body", "must be a json object, not a string"),
        ({"extra_body": '{"model": "gpt-x"}'}, "extra_body", "may not set model: clearloop sends that field"),
        (
            {"extra_body": '{"messages": [], "stream": false}'},
            "extra_body",
            "may not set messages, stream",
        ),
        ({"thinking_budget": "2000"}, "thinking_budget", "preset 'openai' does not support thinking_budget"),
        ({"reasoning_effort": "extreme"}, "reasoning_effort", "reasoning effort 'extreme' is not one of"),
        (
            {
                "kind": "anthropic",
                "preset": "anthropic",
                "thinking_budget": "5000",
                "max_output_tokens": "4096",
            },
            "thinking_budget",
            "must be below the output limit (4096 tokens)",
        ),
        (
            {"kind": "anthropic", "preset": "anthropic", "thinking_budget": "100"},
            "thinking_budget",
            "at least 1024",
        ),
        ({"idle_timeout": "0"}, "idle_timeout", "must be a positive number of seconds"),
        (
            {"preset": "qwen", "thinking": "on", "capability_overrides": '{"stream": false}'},
            "thinking",
            "qwen's thinking mode needs streaming",
        ),
    ],
)
def test_knobs_the_provider_would_refuse_are_refused_with_the_reason(login, overrides, field, error):
    response = login("ada").post(f"{CHANGELIST}add/", form_data(**overrides))
    assert response.status_code == 200
    form = response.context["adminform"].form
    assert error in " ".join(form.errors.get(field, [])).lower()
    assert not ProviderConfig.objects.filter(name="acme").exists()


def test_knobs_are_saved_and_reach_the_provider_settings(login):
    from chatapp.services.provider_settings import max_output_tokens, provider_settings

    client = login("ada")
    response = client.post(
        f"{CHANGELIST}add/",
        form_data(
            kind="anthropic",
            preset="anthropic",
            model="claude-opus-5",
            max_output_tokens="",
            reasoning_effort="high",
            thinking="on",
            thinking_budget="8000",
            idle_timeout="900",
            max_retries="0",
            extra_body='{"metadata": {"user_id": "clearloop"}}',
        ),
    )
    assert response.status_code == 302, response.content.decode()[-3000:]
    config = ProviderConfig.objects.get(name="acme")
    settings = provider_settings(config, "")
    assert settings.knobs.thinking is True and settings.knobs.thinking_budget == 8000
    assert settings.extra_body == {"metadata": {"user_id": "clearloop"}}
    assert settings.idle_timeout == 900 and settings.total_timeout is None and settings.max_retries == 0
    assert max_output_tokens(config, "") == 32_000  # empty = the preset's default


def test_an_env_provider_shows_its_guessed_preset(login, monkeypatch, settings):
    from chatapp.env_providers import openai_provider
    from chatapp.services.providers import ensure_env_providers

    monkeypatch.setenv("OPENAI_REASONING_EFFORT", "high")
    monkeypatch.setenv("OPENAI_EXTRA_BODY", '{"thinking": {"type": "enabled"}}')
    settings.OPENAI_API_KEY = "sk-env"
    settings.OPENAI_MODEL = "deepseek-v4-pro"
    settings.OPENAI_BASE_URL = "https://api.deepseek.com/v1"
    settings.OPENAI_PROVIDER = openai_provider(settings.OPENAI_BASE_URL, "chat", settings.OPENAI_MODEL)
    ensure_env_providers()
    config = ProviderConfig.objects.get(name="openai")
    assert config.preset == "deepseek" and config.reasoning_effort == "high"
    assert config.extra_body == {"thinking": {"type": "enabled"}}
    page = html.unescape(login("ada").get(f"{CHANGELIST}{config.pk}/change/").content.decode())
    assert "guessed from the base URL host api.deepseek.com (set OPENAI_PRESET to choose)" in page


def test_the_price_table_is_edited_with_the_provider(login):
    from decimal import Decimal

    from chatapp.models import ModelPrice

    client = login("ada")
    rows = {
        "prices-TOTAL_FORMS": "2",
        "prices-0-model": "acme-1",
        "prices-0-input": "1.25",
        "prices-0-output": "10",
        "prices-0-cached_read": "0.125",
        "prices-0-cache_write": "",
        "prices-0-reasoning": "",
        "prices-1-model": "",
        "prices-1-input": "-1",
    }
    response = client.post(f"{CHANGELIST}add/", form_data(**rows))
    assert response.status_code == 200  # a negative price is refused, nothing is saved
    assert "ensure this value is greater than or equal to 0" in page_messages(response)
    assert not ProviderConfig.objects.filter(name="acme").exists()
    rows["prices-1-input"] = "2"
    assert client.post(f"{CHANGELIST}add/", form_data(**rows)).status_code == 302
    prices = {p.model: p for p in ModelPrice.objects.filter(provider__name="acme")}
    assert prices["acme-1"].input == Decimal("1.25") and prices["acme-1"].cache_write is None  # unknown
    assert prices[""].input == Decimal("2") and prices[""].output is None
    page = page_messages(client.get(f"{CHANGELIST}{prices[''].provider_id}/change/"))
    assert "prices per million tokens (empty = unknown, never guessed)" in page


def test_env_providers_are_written_only_when_the_environment_changed_them(db, settings):
    """Called on every page and send: once the rows match the environment, one read and no write
    (an unconditional update was a committed write that every send queued on)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from chatapp.services.providers import ensure_env_providers

    settings.DEBUG = True  # the demo model is described
    settings.DEMO_MODEL_URL = "http://127.0.0.1:8000/demo-llm/v1"
    ensure_env_providers()
    demo = ProviderConfig.objects.get(name="demo")
    assert demo.base_url == "http://127.0.0.1:8000/demo-llm/v1" and demo.is_demo
    with CaptureQueriesContext(connection) as queries:
        ensure_env_providers()
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["SELECT"]

    settings.DEMO_MODEL_URL = "http://127.0.0.1:9000/demo-llm/v1"  # the environment moved it
    ProviderConfig.objects.filter(name="demo").update(label="renamed in the admin")
    ensure_env_providers()
    demo.refresh_from_db()
    assert (demo.base_url, demo.label) == ("http://127.0.0.1:9000/demo-llm/v1", "Demo model")

    ProviderConfig.objects.filter(name="demo").delete()
    ensure_env_providers()
    assert ProviderConfig.objects.filter(name="demo", is_demo=True).count() == 1
