"""Review L9 and M6 in the browser: opening a conversation with finished runs resumes none of them
(the server rendered them), fetches no fragment, and a run with a 2 MiB stored frame does not break
the socket."""

from __future__ import annotations

import json

import pytest

from chatapp.models import Conversation, Message, Run, RunEvent

pytestmark = pytest.mark.django_db(transaction=True)


def finished_runs(owner, count: int) -> Conversation:
    convo = Conversation.objects.create(owner=owner, title="Long history")
    previous = None
    for i in range(count):
        user = Message.objects.create(
            conversation=convo, role="user", content=f"question {i}", payload={}, parent_run=previous
        )
        run = Run.objects.create(
            conversation=convo, user_message=user, provider_name="demo", model="m", status="succeeded",
            final_text=f"answer {i}",
        )
        Message.objects.create(conversation=convo, run=run, role="assistant", content=f"answer {i}", payload={})
        user.run = previous = run
        user.save(update_fields=["run"])
        big = {"name": "write_file", "status": "failed", "arguments": "A" * (2 * 1024 * 1024)} if i == 0 else {}
        frames = [("status", {"status": "running"}), ("delta", {"text": f"answer {i}", "tool_calls": []})]
        frames += [("tool_call", big)] if big else []
        frames += [("run_finished", {"text": f"answer {i}"}), ("status", {"status": "succeeded"})]
        for seq, (kind, payload) in enumerate(frames, 1):
            RunEvent.objects.create(run=run, seq=seq, type=kind, payload=payload, durable=kind != "delta")
    return convo


def test_opening_a_conversation_replays_and_fetches_nothing_finished(cast, demo_provider, page_for):
    convo = finished_runs(cast["alice"], 6)
    page = page_for("alice", "alice-pass")
    sent_by_page: list[dict] = []
    connections: list[int] = []
    fragments: list[str] = []
    to_page: list[dict] = []

    def handler(ws):
        connections.append(1)
        server = ws.connect_to_server()

        def forward(message):
            to_page.append(json.loads(message))
            ws.send(message)

        server.on_message(forward)

        def to_server(message):
            sent_by_page.append(json.loads(message))
            server.send(message)

        ws.on_message(to_server)

    page.route_web_socket("**/ws/conversations/**", handler)
    page.on("request", lambda request: fragments.append(request.url) if "/fragment/" in request.url else None)
    page.goto(f"/c/{convo.pk}/")
    # The server answers the page's resume with whatever it replays, then replay_done: once that has
    # reached the page, any (wrong) replay and the fetches it triggers have happened.
    for _ in range(200):
        if any(f.get("type") == "replay_done" for f in to_page):
            break
        page.wait_for_timeout(50)  # lets Playwright deliver the socket's events
    page.evaluate("() => new Promise(r => setTimeout(r, 0))")
    assert sent_by_page[0] == {"resume": {}, "since_run": None}
    assert [f["type"] for f in to_page] == ["replay_done"]
    assert fragments == []
    assert len(connections) == 1
    assert page.locator("[data-run]").count() == 6
