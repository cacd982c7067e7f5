"""A live frame lost on the way: the page holds later frames, asks for a replay, and the streamed text
comes out exactly as stored (no gap, no duplicate, nothing out of order)."""

from __future__ import annotations

import json

import pytest

from chatapp.models import Run
from tests.browser.pages import new_conversation

pytestmark = pytest.mark.django_db(transaction=True)

RECORD_TEXT = """
() => {
  window.__texts = [];
  new MutationObserver(() => {
    const el = document.querySelector('[data-role=stream]');
    if (el) window.__texts.push(el.textContent);
  }).observe(document.getElementById('messages'), {subtree: true, childList: true, characterData: true});
}
"""


def test_a_dropped_delta_is_replayed_in_order(cast, demo_provider, page_for):
    page = page_for("alice", "alice-pass")
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    sent_by_page: list[dict] = []
    dropped: list[dict] = []

    def handler(ws):
        server = ws.connect_to_server()

        def to_page(message):
            frame = json.loads(message)
            if (
                frame.get("type") == "delta"
                and frame["data"].get("text")
                and not dropped
                and frame["seq"] >= 5
            ):
                dropped.append(frame)  # lost on the way to the browser
                return
            ws.send(message)

        def to_server(message):
            sent_by_page.append(json.loads(message))
            server.send(message)

        server.on_message(to_page)
        ws.on_message(to_server)

    page.route_web_socket("**/ws/conversations/**", handler)
    page.reload()  # connect through the route
    page.wait_for_selector("#composer textarea")
    page.evaluate(RECORD_TEXT)
    page.fill("#message", "Please stream a long enough answer for this test")
    page.press("#message", "Enter")
    page.locator("[data-role=answer]").wait_for(timeout=60_000)
    run = Run.objects.get(conversation__owner=cast["alice"])
    assert dropped, "the test dropped no frame"
    lost = dropped[0]
    assert {"resume": {str(run.pk): lost["seq"] - 1}, "since_run": run.pk} in sent_by_page
    texts = page.evaluate("window.__texts")
    assert texts and texts[-1] == run.final_text
    assert all(run.final_text.startswith(t) for t in texts), "text was applied out of order"


def test_frames_that_beat_the_send_response_are_not_lost(cast, demo_provider, page_for):
    # The worker can stream before the send's HTTP response reaches the page (CI saw the answer's first
    # words vanish: the run's shell, fetched for the early frames, replaced the one that had them).
    page = page_for("alice", "alice-pass")
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    forwarded: list[dict] = []
    held_sends: list = []

    def ws_handler(ws):
        server = ws.connect_to_server()

        def to_page(message):
            forwarded.append(json.loads(message))
            ws.send(message)

        server.on_message(to_page)
        ws.on_message(lambda message: server.send(message))

    def hold_send(route):
        held_sends.append((route, route.fetch()))  # answered only once frames have reached the page

    page.route_web_socket("**/ws/conversations/**", ws_handler)
    page.route("**/send/", hold_send)
    page.reload()
    page.wait_for_selector("#composer textarea")
    page.evaluate(RECORD_TEXT)
    page.fill("#message", "Please stream a long enough answer for this test")
    page.press("#message", "Enter")
    text_frames = lambda: sum(1 for f in forwarded if f.get("type") == "delta" and f["data"].get("text"))  # noqa: E731
    for _ in range(3000):  # until the send is held and three text frames reached the page (60 s at most)
        if held_sends and text_frames() >= 3:
            break
        page.wait_for_timeout(20)  # lets Playwright dispatch the route and websocket events
    assert held_sends and text_frames() >= 3, (len(held_sends), text_frames())
    route, response = held_sends[0]
    route.fulfill(response=response)
    page.locator("[data-role=answer]").wait_for(timeout=60_000)
    run = Run.objects.get(conversation__owner=cast["alice"])
    texts = page.evaluate("window.__texts")
    assert texts and texts[-1] == run.final_text, texts[:4]
    assert all(run.final_text.startswith(t) for t in texts), "text was applied out of order or lost"
    assert page.locator(f"[id=run-{run.pk}]").count() == 1
    order = page.evaluate(
        "(id) => Array.from(document.querySelectorAll('#messages > article')).map(a => a.className + ':' + (a.id || ''))",
        run.pk,
    )
    assert order[-2].startswith("msg user") and order[-1].endswith(f"run-{run.pk}"), order
