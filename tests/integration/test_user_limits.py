"""Issue 16 item 6 (review M4, M5) through the real stack: per-user limits on runs in flight and sends
per minute, models only from the provider's list, login throttling with lockout."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.test import override_settings

from chatapp.models import Conversation, Run
from chatapp.services.limits import LimitReached, ModelNotAllowed
from chatapp.services.runs import start_run
from tests.integration.client import LiveClient, session_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_parallel_sends_of_one_user_stop_at_the_in_flight_limit(cast, demo_provider, live_stack, settings):
    # The review's attack: 50 parallel sends from one user, each in its own conversation.
    limit = settings.MAX_RUNS_IN_FLIGHT_PER_USER
    client = LiveClient(live_stack.base_url, session_for(cast["alice"]))
    convos = [Conversation.objects.create(owner=cast["alice"], provider=demo_provider) for _ in range(8)]
    slow = "[[demo:slow]] take your time"
    # The CSRF cookie first: eight page reads at once without one would each be given a different one,
    # and a send whose header carries another read's token than the cookie it sends is refused (403).
    client.csrf(f"/c/{convos[0].pk}/")
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda c: client.send(c.pk, slow).status_code, convos))
    assert codes.count(200) == limit, codes
    assert codes.count(429) == len(convos) - limit
    refused = client.send(convos[-1].pk, "one more")
    assert refused.status_code in (200, 429)  # 200 only if one finished meanwhile
    if refused.status_code == 429:
        assert "answers in progress; the limit is" in refused.text
    # Another user is not affected.
    other = Conversation.objects.create(owner=cast["bob"], provider=demo_provider)
    assert LiveClient(live_stack.base_url, session_for(cast["bob"])).send(other.pk, "hi").status_code == 200
    for run in Run.objects.filter(status__in=("queued", "running")):
        run.cancel_requested = True
        run.save(update_fields=["cancel_requested"])


def test_sends_per_minute_are_limited(cast, demo_provider):
    convos = [Conversation.objects.create(owner=cast["alice"], provider=demo_provider) for _ in range(4)]
    with override_settings(MAX_SENDS_PER_MINUTE_PER_USER=3, MAX_RUNS_IN_FLIGHT_PER_USER=100):
        for convo in convos[:3]:
            Run.objects.filter(pk=start_run(convo, "hello").pk).update(status="succeeded")
        with pytest.raises(
            LimitReached, match=r"3 messages in the last minute; the limit is 3. Try again in \d+ s"
        ):
            start_run(convos[3], "hello")
    assert Run.objects.count() == 3


def test_a_model_the_provider_does_not_offer_is_refused(cast, demo_provider, live_stack):
    convo = Conversation.objects.create(owner=cast["alice"], provider=demo_provider)
    client = LiveClient(live_stack.base_url, session_for(cast["alice"]))
    token = client.csrf(f"/c/{convo.pk}/")
    answer = client.http.post(
        f"/c/{convo.pk}/settings/",
        data={"provider": demo_provider.name, "model": "o1-pro-any-model-the-user-wants"},
        headers={"X-CSRFToken": token, "Referer": live_stack.base_url + "/", "HX-Request": "true"},
    )
    assert answer.status_code == 422 and "not offered" in answer.text
    convo.refresh_from_db()
    assert convo.model_override == ""
    # Set behind the form's back (an older row): the send refuses it too, nothing goes upstream.
    Conversation.objects.filter(pk=convo.pk).update(model_override="o1-pro-any-model-the-user-wants")
    convo.refresh_from_db()
    with pytest.raises(ModelNotAllowed, match="not offered"):
        start_run(convo, "hi")
    # An admin-allowed pattern lets it through.
    demo_provider.allowed_models = "o1-*\nclaude-3-haiku"
    demo_provider.save(update_fields=["allowed_models"])
    convo.refresh_from_db()
    assert start_run(convo, "hi").model == "o1-pro-any-model-the-user-wants"


def test_login_is_locked_after_repeated_wrong_passwords(cast, live_stack, settings):
    # Review M5: 60 wrong passwords, then the right one worked.
    with httpx.Client(base_url=live_stack.base_url, timeout=30) as browser:

        def attempt(password: str) -> httpx.Response:
            page = browser.get("/login/")
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
            return browser.post(
                "/login/",
                data={"username": "ada", "password": password, "csrfmiddlewaretoken": token},
                headers={"Referer": live_stack.base_url + "/login/"},
            )

        codes = [attempt(f"wrong-{i}").status_code for i in range(settings.AXES_FAILURE_LIMIT + 2)]
        assert codes[: settings.AXES_FAILURE_LIMIT - 1] == [200] * (settings.AXES_FAILURE_LIMIT - 1)
        assert codes[-1] == 429
        locked = attempt("ada-pass")
        assert locked.status_code == 429 and "Too many failed logins" in locked.text
        assert "sessionid" not in browser.cookies
