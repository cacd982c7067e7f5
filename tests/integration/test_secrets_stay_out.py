"""A provider key never lands in a stored request, the event log, the trace API or the worker's logs."""

from __future__ import annotations

import asyncio
import json

import pytest

from chatapp.models import Conversation, ProviderConfig, Run, RunEvent
from chatapp.secrets import encrypt
from tests.integration.client import LiveClient, frames_until, session_for

pytestmark = pytest.mark.django_db(transaction=True)
SECRET = "sk-proj-ThisIsAFakeButSecretKey0123456789abcd"


def test_an_encrypted_key_is_sent_but_never_stored_or_logged(cast, demo_provider, live_stack):
    keyed = ProviderConfig.objects.create(
        name="keyed",
        base_url=demo_provider.base_url,
        model="clearloop-demo",
        preset="demo",
        api_key_encrypted=encrypt(SECRET),
        extra_headers={"X-Team": "blue"},
    )
    assert SECRET not in keyed.api_key_encrypted
    convo = Conversation.objects.create(owner=cast["alice"], provider=keyed)
    client = LiveClient(live_stack.base_url, session_for(cast["alice"]))

    async def scenario():
        async with client.ws(convo.pk) as ws:
            await ws.send('{"resume": {}}')
            await asyncio.to_thread(client.send, convo.pk, f"my key is {SECRET}, keep it safe")
            return await asyncio.wait_for(
                frames_until(ws, lambda f: f["type"] in ("run_finished", "run_failed")), 60
            )

    frames = asyncio.run(scenario())
    assert frames[-1]["type"] == "run_finished"
    run = Run.objects.get(conversation=convo)
    stored = json.dumps([r.request for r in run.rounds.all()] + [r.response for r in run.rounds.all()])
    assert SECRET not in stored and "[REDACTED]" in stored
    assert "authorization" not in stored.lower() or "Bearer sk" not in stored
    events = json.dumps(
        list(RunEvent.objects.filter(run=run, durable=True).values_list("payload", flat=True))
    )
    assert SECRET not in events
    trace = client.http.get(f"/api/runs/{run.pk}/trace").text
    assert SECRET not in trace
    logs = "".join(p.read_text(errors="replace") for p in (live_stack.data_dir / "logs").glob("*.log"))
    assert '"event": "round_finished"' in logs  # the structured trace log is written (R-RUN-6)
    assert SECRET not in logs
