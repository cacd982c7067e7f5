"""Opened while a run streams, the page shows the text so far before its socket is even open, resumes
after the last frame it was rendered with, and adds what came since exactly once."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from chatapp.models import RunEvent
from tests.web.test_streamed_so_far import streaming_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_text_so_far_is_on_the_page_and_the_rest_follows_once(cast, demo_provider, page_for):
    run = streaming_run(cast["alice"])
    # Held by a worker elsewhere: nothing of this stack drives it while the test runs.
    run.lease_owner, run.lease_expires_at = "elsewhere", timezone.now() + timedelta(hours=1)
    run.save(update_fields=["lease_owner", "lease_expires_at"])
    page = page_for("alice", "alice-pass")
    sent: list[str] = []  # what the page sent before the socket reached the server
    link: dict = {}

    def handler(ws):
        def to_server(message: str) -> None:
            if "server" in link:
                link["server"].send(message)
            else:
                sent.append(message)

        ws.on_message(to_server)
        link["page"] = ws  # not connected to the server yet: the page has only its HTML

    page.route_web_socket("**/ws/conversations/**", handler)
    page.goto(f"/c/{run.conversation_id}/")
    stream = page.locator(f"#run-{run.pk} [data-role=stream]")
    expect(stream).to_have_text("Hello <b>there</b>\nline two")
    assert stream.locator("b").count() == 0
    expect(page.locator(f"#run-{run.pk} [data-role=waiting]")).to_have_text("")

    # A frame stored after the page was rendered, before its socket reaches the server: the resume
    # request the page sent names the last frame it was rendered with, and brings this one.
    RunEvent.objects.create(
        run=run, seq=6, type="delta", payload={"round_index": 0, "text": " and more", "tool_calls": []}
    )
    for _ in range(250):  # the page sends its resume request when its socket opens
        if sent:
            break
        page.wait_for_timeout(20)
    assert sent, "the page sent no resume request"
    assert json.loads(sent[0])["resume"][str(run.pk)] == 5
    link["server"] = link["page"].connect_to_server()
    for message in sent:
        link["server"].send(message)
    # Replayed from the start (the old way), the text would hold "Hello…" twice and never match.
    expect(stream).to_have_text("Hello <b>there</b>\nline two and more", timeout=30_000)
