"""The approvers' badge, its live list and the queue hold the same calls: those whose policy asks an
admin. Calls whose policy asks the user are the user's to answer in the chat, never the approvers'."""

from __future__ import annotations

import html

import pytest

from chatapp.models import ToolPolicy
from chatapp.services.approvals import pending, pending_count
from tests.admin.test_approvals import QUEUE, waiting_call

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_waiting(people):
    ToolPolicy.objects.create(pattern="demo_tools__ask_*", tier="low", approval="always", approver="user")
    admin_call = waiting_call(people["alice"], arguments='{"to": "13800000000", "text": "<b>hi</b>"}')
    user_call = waiting_call(people["alice"], name="demo_tools__ask_me", risk="low")
    return admin_call, user_call


def test_only_calls_for_an_admin_are_counted_listed_and_queued(login, two_waiting):
    admin_call, user_call = two_waiting
    assert pending() == [admin_call] and pending_count() == 1
    client = login("april")
    count = client.get("/approvals/count/").json()
    assert count["pending"] == 1
    assert count["latest"] == {
        "id": admin_call.pk,
        "name": "demo_tools__send_message",
        "user": "alice",
        "url": f"{QUEUE}{admin_call.pk}/change/",
    }
    listed = client.get("/approvals/waiting/")
    body = listed.content.decode()
    assert listed.status_code == 200 and listed["Cache-Control"] == "no-store"
    assert f'href="{QUEUE}{admin_call.pk}/change/"' in body and "demo_tools__ask_me" not in body
    assert "alice" in body and "high risk" in body
    assert "&lt;b&gt;hi&lt;/b&gt;" in body and "<b>hi</b>" not in body  # arguments are text, escaped
    queue = html.unescape(client.get(QUEUE).content.decode()).replace("<wbr>", "")  # names' break points
    assert "demo_tools__send_message" in queue and "demo_tools__ask_me" not in queue
    # The badge in every page header says the same number.
    assert 'data-role="approvals-count">1<' in client.get("/admin/").content.decode()


def test_the_list_says_so_when_nothing_waits_and_refuses_non_approvers(login, people):
    assert "Nothing waits for a decision." in login("april").get("/approvals/waiting/").content.decode()
    for name in ("alice", "stan", "otto"):
        client = login(name)
        assert client.get("/approvals/waiting/").status_code == 403
        assert client.get("/approvals/count/").status_code == 403


def test_the_list_shows_the_oldest_few_and_how_many_more(login, people):
    for _ in range(12):
        waiting_call(people["alice"])
    body = login("april").get("/approvals/waiting/").content.decode()
    assert body.count("<li data-call=") == 10 and "and 2 more in the queue" in body
