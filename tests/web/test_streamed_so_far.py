"""A conversation opened while a run streams shows the text streamed so far in its HTML, as plain text,
and names the last frame read with it (``data-seq``), so the page's socket resumes after it instead of
replaying the whole run. Read in one statement: a frame stored meanwhile is either in the text and
below the number, or above it."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from chatapp import event_log
from chatapp.models import Conversation, Message, Run, RunEvent

pytestmark = pytest.mark.django_db

STREAM = re.compile(r'<div class="body streaming" data-role="stream"(?: data-seq="(\d+)")?>(.*?)</div>', re.S)


def streaming_run(owner, status: str = "running") -> Run:
    convo = Conversation.objects.create(owner=owner, title="streaming")
    question = Message.objects.create(conversation=convo, role="user", content="go", payload={})
    run = Run.objects.create(
        conversation=convo, user_message=question, provider_name="demo", model="m", status=status
    )
    question.run = run
    question.save(update_fields=["run"])
    frames = [
        ("status", {"status": "running"}, True),
        ("round_started", {"round_index": 0, "kind": "normal"}, False),
        ("delta", {"round_index": 0, "text": "Hel", "tool_calls": []}, False),
        ("delta", {"round_index": 0, "text": "lo <b>there</b>\nline two", "tool_calls": []}, False),
        ("tool_call", {"call_id": "c1", "name": "read_file", "status": "proposed"}, True),
    ]
    for seq, (kind, payload, durable) in enumerate(frames, 1):
        RunEvent.objects.create(run=run, seq=seq, type=kind, payload=payload, durable=durable)
    return run


def page_stream(client: Client, run: Run) -> tuple[str | None, str]:
    html = client.get(f"/c/{run.conversation_id}/").content.decode()
    found = STREAM.search(html)
    assert found, "no stream box on the page"
    waiting = re.search(r'data-role="waiting" role="status">(.*?)</div>', html, re.S)
    return found[1], found[2] + "|" + (waiting[1] if waiting else "")


def test_the_page_shows_the_text_so_far_and_where_it_ends(cast):
    run = streaming_run(cast["alice"])
    client = Client()
    client.force_login(cast["alice"])
    seq, shown = page_stream(client, run)
    assert seq == "5"  # the last frame read, whatever its kind: the socket resumes after it
    text, waiting = shown.split("|")
    assert text == "Hello &lt;b&gt;there&lt;/b&gt;\nline two"  # escaped, the lines as streamed
    assert waiting == ""  # "Thinking…" gave way to the text, as chat.js does on a delta


def test_a_run_waiting_for_approval_keeps_its_waiting_words_beside_its_text(cast):
    run = streaming_run(cast["alice"], status="awaiting_approval")
    client = Client()
    client.force_login(cast["alice"])
    _, shown = page_stream(client, run)
    assert shown.startswith("Hello") and shown.endswith("|Waiting for approval…")


def test_a_run_with_nothing_stored_yet_renders_an_empty_box_replayed_from_the_start(cast):
    convo = Conversation.objects.create(owner=cast["alice"], title="queued")
    question = Message.objects.create(conversation=convo, role="user", content="go", payload={})
    run = Run.objects.create(conversation=convo, user_message=question, provider_name="demo", model="m")
    client = Client()
    client.force_login(cast["alice"])
    seq, shown = page_stream(client, run)
    assert seq is None and shown == "|Thinking…"


def test_a_secret_in_a_stored_delta_is_shown_redacted(cast, settings):
    run = streaming_run(cast["alice"])
    RunEvent.objects.create(
        run=run,
        seq=6,
        type="delta",
        payload={"text": " key sk-proj-abcdefghijklmnopqrstuvwx", "tool_calls": []},
    )
    text, seq = event_log.streamed_so_far(run.pk)
    assert seq == 6 and "sk-proj-abcdefghijklmnopqrstuvwx" not in text and text.startswith("Hello")
