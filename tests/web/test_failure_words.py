"""A failed run is explained in words with the next step; the technical class goes to the trace."""

from __future__ import annotations

import pytest

from chatapp.models import Conversation, ProviderConfig, Run
from chatapp.views.failures import explain


@pytest.fixture
def failed(cast):
    ProviderConfig.objects.create(name="down", base_url="http://127.0.0.1:9/v1", model="m", preset="demo")
    convo = Conversation.objects.create(owner=cast["alice"])

    def make(error_class: str, error: str) -> Run:
        return Run(
            conversation=convo,
            provider_name="down",
            model="m",
            status="failed",
            error_class=error_class,
            error=error,
        )

    return make


def test_a_refused_connection_names_the_server_and_the_provider_to_check(failed):
    out = explain(
        failed("TransientUpstream", "connection failed: ConnectError: All connection attempts failed")
    )
    assert out.text.startswith("The model server at 127.0.0.1:9 refused the connection")
    assert "check the provider 'down' in the admin" in out.text
    assert "ConnectError" not in out.text
    assert (
        out.technical == "TransientUpstream: connection failed: ConnectError: All connection attempts failed"
    )
    assert out.admin_url.endswith("/change/")


@pytest.mark.parametrize(
    ("cls", "words"),
    [
        ("AuthenticationFailed", "check its API key"),
        ("QuotaExceeded", "no quota or credit left"),
        ("RateLimited", "Wait a minute"),
        ("ContextTooLong", "Start a new conversation"),
        ("StalledStream", "idle timeout"),
        ("BudgetExceeded", "larger quota"),
        ("SomethingNew", "The run failed: boom"),
    ],
)
def test_each_known_class_has_its_own_next_step(failed, cls, words):
    assert words in explain(failed(cls, "boom")).text


def test_a_rate_limit_longer_than_a_run_waits_names_the_servers_wait(failed):
    # The loop fails such a run at once (agent/loop/runner.py); the person is told the wait the
    # server asked for, the trace keeps the provider's words.
    stored = (
        "Number of request tokens has exceeded your per-minute rate limit (the provider asks to wait "
        "120 s before retrying, longer than a run waits: 30 s)"
    )
    out = explain(failed("RateLimited", stored))
    assert out.text == (
        "The model server at 127.0.0.1:9 is limiting requests (rate limit) and asks to wait 120 s "
        "before the next one. Try again after that."
    )
    assert out.technical == f"RateLimited: {stored}"
    from django.utils import translation

    with translation.override("zh-hans"):
        assert "要求等待 120 秒" in explain(failed("RateLimited", stored)).text
