"""A long conversation opens with its latest exchanges (``CLEARLOOP_PAGE_EXCHANGES``) and brings the
earlier ones as the person scrolls up: the page's cost no longer grows with the conversation's length.
An address naming an earlier exchange (``?since=``, which chat.js asks for) opens from there."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.exchanges import answered

pytestmark = pytest.mark.django_db


@pytest.fixture
def long(cast, settings):
    settings.PAGE_EXCHANGES = 10
    convo, runs = answered(cast["alice"], 25, answer=lambda i: f"answer number {i}")
    client = Client()
    client.force_login(cast["alice"])
    return client, convo, runs


def shown(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<article class="msg assistant[^"]*" id="run-(\d+)"', html)]


def earlier_button(html: str) -> str | None:
    found = re.search(r'hx-get="(/c/\d+/earlier/\?before=\d+)"', html)
    return found.group(1) if found else None


def test_the_page_opens_with_the_latest_and_brings_the_rest_in_order(long):
    client, convo, runs = long
    page = client.get(f"/c/{convo.pk}/").content.decode()
    assert shown(page) == [r.pk for r in runs[15:]]
    assert "Show the 15 earlier exchanges" in page
    assert earlier_button(page) == f"/c/{convo.pk}/earlier/?before={runs[15].pk}"
    got: list[int] = []
    url = earlier_button(page)
    while url:
        part = client.get(url)
        assert part.status_code == 200
        html = part.content.decode()
        got = shown(html) + got
        assert "question" in html  # the questions come with their answers
        url = earlier_button(html)
    assert got == [r.pk for r in runs[:15]], "every earlier exchange once, in order"


def test_an_address_naming_an_earlier_exchange_opens_from_it(long):
    client, convo, runs = long
    page = client.get(f"/c/{convo.pk}/?since={runs[3].pk}").content.decode()
    assert shown(page) == [r.pk for r in runs[3:]]
    assert earlier_button(page) == f"/c/{convo.pk}/earlier/?before={runs[3].pk}"
    # A run of another conversation (or none) is ignored: the latest exchanges.
    assert shown(client.get(f"/c/{convo.pk}/?since=999999").content.decode()) == [r.pk for r in runs[15:]]


def test_zero_shows_everything_and_a_short_conversation_has_no_button(long, settings):
    client, convo, runs = long
    settings.PAGE_EXCHANGES = 0
    page = client.get(f"/c/{convo.pk}/").content.decode()
    assert shown(page) == [r.pk for r in runs] and earlier_button(page) is None
    settings.PAGE_EXCHANGES = 30
    assert earlier_button(client.get(f"/c/{convo.pk}/").content.decode()) is None


def test_bad_and_foreign_requests_are_refused(long, cast):
    client, convo, runs = long
    assert client.get(f"/c/{convo.pk}/earlier/").status_code == 400
    assert client.get(f"/c/{convo.pk}/earlier/?before=x").status_code == 400
    gone = client.get(f"/c/{convo.pk}/earlier/?before=999999")
    assert gone.status_code == 200 and "changed in another tab" in gone.content.decode()
    assert shown(gone.content.decode()) == []
    bob = Client()
    bob.force_login(cast["bob"])
    assert bob.get(f"/c/{convo.pk}/earlier/?before={runs[15].pk}").status_code == 404
    assert Client().get(f"/c/{convo.pk}/earlier/?before={runs[15].pk}").status_code == 302  # sign in
