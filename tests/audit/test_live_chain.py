"""End to end: a real run through daphne and the Celery worker leaves a complete, valid audit chain."""

from __future__ import annotations

import asyncio

import pytest

from chatapp.audit import verify_chain
from chatapp.audit.chain import digest
from chatapp.models import AuditEvent, Conversation, Run
from tests.integration.client import LiveClient, frames_until, session_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_live_run_is_chained_from_creation_to_finish(cast, demo_provider, live_stack):
    convo = Conversation.objects.create(owner=cast["alice"], provider=demo_provider)
    client = LiveClient(live_stack.base_url, session_for(cast["alice"]))

    async def scenario():
        async with client.ws(convo.pk) as ws:
            await ws.send('{"resume": {}}')
            await asyncio.to_thread(client.send, convo.pk, "Who are the two newest users?")
            return await asyncio.wait_for(
                frames_until(ws, lambda f: f["type"] in ("run_finished", "run_failed")), 60
            )

    frames = asyncio.run(scenario())
    run = Run.objects.get(conversation=convo)
    rows = list(AuditEvent.objects.filter(run_id=run.pk).order_by("seq"))
    kinds = [r.kind for r in rows]
    assert kinds[0] == "run_created" and rows[0].actor == "alice"
    assert kinds[-1] == "run_finished" and rows[-1].payload["status"] == run.status
    assert frames[-1]["type"] == "run_finished" and run.status == "succeeded"
    stored_rounds = [r for r in rows if r.kind == "round_stored"]
    assert len(stored_rounds) == run.rounds.count() >= 1
    for row in stored_rounds:
        stored = run.rounds.get(index=row.payload["round_index"])
        assert row.payload["request_sha256"] == digest(stored.request)  # the stored round is the chained one
    statuses = [r.payload["status"] for r in rows if r.kind == "tool_call_status"]
    # The demo model answers this with one query_database call: every status change is chained.
    assert run.tool_calls.count() == 1
    assert statuses[0] == "proposed" and statuses[-1] == "succeeded" and "running" in statuses
    assert rows[-1].payload["final_text_sha256"] == digest(run.final_text)
    assert verify_chain().ok
