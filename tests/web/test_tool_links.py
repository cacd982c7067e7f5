"""A tool server's link on the chat page: shown safely, answered only by the run's user, once."""

from __future__ import annotations

import pytest
from django.test import Client

from chatapp.models import AuditEvent, Conversation, Run, ToolLink

pytestmark = pytest.mark.django_db


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def run(cast):
    convo = Conversation.objects.create(owner=cast["alice"])
    return Run.objects.create(conversation=convo, status="running", provider_name="demo", model="m")


def link(run, url="https://accounts.example.com/connect?flow=1", message="Connect your account.", **kw):
    fields = {"call_id": "c1", "tool": "hosted__connect_account", "server": "hosted", **kw}
    return ToolLink.objects.create(run=run, url=url, message=message, **fields)


def fragment(client, run) -> str:
    response = client.get(f"/runs/{run.pk}/fragment/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    return response.content.decode()


def test_a_pending_link_shows_the_full_url_the_host_and_opens_in_a_new_tab_without_opener(cast, run):
    item = link(run)
    html = fragment(login(cast["alice"]), run)
    assert '<strong data-role="link-host">accounts.example.com</strong>' in html
    assert "https://accounts.example.com/connect?flow=1</code>" in html
    assert (
        'href="https://accounts.example.com/connect?flow=1" target="_blank" rel="noopener noreferrer"' in html
    )
    assert f'data-link-accept="/runs/{run.pk}/links/{item.pk}/accept/"' in html
    assert f'hx-post="/runs/{run.pk}/links/{item.pk}/decline/"' in html


def test_hostile_links_and_messages_are_never_markup_or_clickable(cast, run):
    link(run, url="javascript:alert(1)", message='<img src=x onerror="alert(2)"> https://evil.example')
    link(run, url="https://xn--pple-43d.com/login")
    html = fragment(login(cast["alice"]), run)
    assert 'href="javascript:' not in html and "<img src=x" not in html
    assert "&lt;img src=x onerror=&quot;alert(2)&quot;&gt;" in html
    assert 'href="https://evil.example' not in html  # a URL in the message stays text
    assert "not a web address" in html
    assert "internationalised name" in html  # punycode host flagged


def test_only_the_runs_user_answers_and_only_once(cast, run):
    item = link(run)
    assert login(cast["bob"]).post(f"/runs/{run.pk}/links/{item.pk}/accept/").status_code == 404
    assert login(cast["ada"]).post(f"/runs/{run.pk}/links/{item.pk}/accept/").status_code == 404
    alice = login(cast["alice"])
    assert alice.post(f"/runs/{run.pk}/links/{item.pk}/maybe/").status_code == 400
    assert alice.post(f"/runs/{run.pk}/links/{item.pk}/decline/").status_code == 204
    assert alice.post(f"/runs/{run.pk}/links/{item.pk}/accept/").status_code == 409  # already answered
    item.refresh_from_db()
    assert item.state == "declined" and item.answered_by == cast["alice"]
    assert AuditEvent.objects.filter(kind="tool_link_answered", run_id=run.pk).count() == 1
    # The answered link is no longer offered.
    assert "data-link-accept" not in fragment(alice, run)


def in_thread(fn, *args):
    """Run an ORM call in a worker thread and close that thread's connection after it."""
    from django.db import connection

    try:
        return fn(*args)
    finally:
        connection.close()


class RecorderStandIn:
    """The recorder's side that links.ask uses: the run, the database, the frames it publishes."""

    def __init__(self, run_id: int) -> None:
        import asyncio

        self.run_id = run_id
        self.frames: list[tuple[int, str]] = []
        self.link_ids: list[int] = []
        db = staticmethod(lambda fn, *a: asyncio.to_thread(in_thread, fn, *a))
        self.runtime = type("Runtime", (), {"db": db})()

    async def publish_link(self, link_id, state, request) -> None:
        self.frames.append((link_id, state))

    async def is_cancelled(self) -> bool:
        return False


def new_run(cast) -> Run:
    convo = Conversation.objects.create(owner=cast["alice"])
    return Run.objects.create(conversation=convo, provider_name="demo", model="m")


REQUEST = dict(server="hosted", message="m", url="https://a.example/x", call_id="c1", tool="t")


@pytest.mark.django_db(transaction=True)
def test_an_unanswered_link_is_cancelled_when_the_wait_runs_out_and_a_late_click_changes_nothing(cast):
    import asyncio

    from agent.toolbox import LinkRequest
    from chatapp.worker import links

    run = new_run(cast)
    recorder = RecorderStandIn(run.pk)
    assert asyncio.run(links.ask(recorder, LinkRequest(**REQUEST), timeout=0.6)) == "cancel"
    item = ToolLink.objects.get(run=run)
    assert item.state == "cancelled" and item.answered_by is None
    assert [state for _, state in recorder.frames] == ["pending", "cancelled"]
    late = login(cast["alice"]).post(f"/runs/{run.pk}/links/{item.pk}/accept/")
    assert late.status_code == 409


@pytest.mark.django_db(transaction=True)
def test_the_users_answer_reaches_the_waiting_worker(cast):
    import asyncio

    from agent.toolbox import LinkRequest
    from chatapp.worker import links

    run = new_run(cast)
    recorder = RecorderStandIn(run.pk)
    client = login(cast["alice"])

    async def scenario():
        waiting = asyncio.create_task(links.ask(recorder, LinkRequest(**REQUEST), timeout=30))
        async with asyncio.timeout(60):
            while not recorder.frames:  # the row exists once the pending frame went out
                if waiting.done():
                    waiting.result()  # raises what stopped it before its first frame
                    raise AssertionError("links.ask returned without publishing a frame")
                await asyncio.sleep(0.01)
        link_id = recorder.frames[0][0]
        url = f"/runs/{run.pk}/links/{link_id}/accept/"
        answered = await asyncio.to_thread(in_thread, client.post, url)
        assert answered.status_code == 204
        return link_id, await asyncio.wait_for(waiting, 5)

    link_id, answer = asyncio.run(scenario())
    assert answer == "accept"
    assert recorder.frames[-1] == (link_id, "accepted")


def test_links_left_pending_by_a_run_segment_are_closed(cast, run):
    from chatapp.worker import links

    waiting, answered, others = link(run), link(run, state="declined"), link(run)
    assert links.close_pending(run.pk, [waiting.pk, answered.pk]) == 1  # a segment closes its own
    assert links.close_pending(run.pk) == 1  # a new segment closes what a dead one left
    for item in (waiting, answered, others):
        item.refresh_from_db()
    assert (waiting.state, answered.state, others.state) == ("cancelled", "declined", "cancelled")
