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
