"""Through the database: a run killed after round 1, its events stored by the worker's own store
functions in PostgreSQL, resumed by the worker's own loader, replays the same signed bytes; the
chat trace, the auditor's view and the trace API show reasoning and "opaque, N bytes" only."""

from __future__ import annotations

import asyncio
import json

import pytest
from django.test import Client
from replay_anthropic_emulator import AnthropicEmulator
from replay_harness import provider_for, run_seed
from replay_seed import FINAL_TEXT, SEED_MESSAGES, SeedFiles

from agent.loop import LoopSettings, RiskPolicy, run_agent
from agent.loop.steps import NextStepFinalOutput
from chatapp.event_codec import event_from_row
from chatapp.models import Conversation, Message, ProviderConfig, Round, Run
from chatapp.worker import store
from chatapp.worker.context import history, load_run_context
from tests.audit.conftest import make_run

MODEL = "claude-fable-5-1"


def _run_row(owner) -> Run:
    ProviderConfig.objects.create(name="claude", kind="anthropic", preset="anthropic",
                                  base_url="http://127.0.0.1:9/", model=MODEL)
    convo = Conversation.objects.create(owner=owner, title="seed")
    user = Message.objects.create(conversation=convo, role="user", content=SEED_MESSAGES[1]["content"], payload={})
    return Run.objects.create(conversation=convo, user_message=user, status="running", provider_name="claude", model=MODEL)


@pytest.mark.django_db
def test_killed_run_resumes_from_postgres_with_the_same_signed_bytes(cast):
    run = _run_row(cast["alice"])
    start = history(run)
    emulator = AnthropicEmulator()
    files = SeedFiles()

    async def first_worker():
        async with provider_for(emulator.app(), "anthropic", "anthropic", MODEL) as provider:
            # Dies right after the round-1 response and both of its tool results are stored.
            _, _, sink, _ = await run_seed(provider, die_after=6, files=files, start=start, resume=False)
        return sink.rows

    rows = asyncio.run(first_worker())
    assert len(rows) == 6
    for seq, (kind, payload) in enumerate(rows, start=1):  # what the recorder writes, in PostgreSQL
        store.persist_durable(run.pk, seq, kind, payload, event_from_row(kind, payload))
    stored_round = Round.objects.get(run=run, index=0)
    blocks = [b["data"] for b in stored_round.response["choices"][0]["replay"]]
    signature = blocks[0]["signature"]
    assert signature == rows[0][1]["response"]["choices"][0]["replay"][0]["data"]["signature"]

    ctx = load_run_context(run.pk)
    assert ctx.state.rounds[0].choice.replay[0].data["signature"] == signature
    second = AnthropicEmulator()

    async def second_worker():
        async with provider_for(second.app(), "anthropic", "anthropic", MODEL) as provider:
            return await run_agent(ctx.state, provider, files, _Sink(), LoopSettings(), RiskPolicy())

    step = asyncio.run(second_worker())
    assert step == NextStepFinalOutput(FINAL_TEXT)
    # The new worker's first request carries the blocks exactly as PostgreSQL kept them (and the
    # emulator checked their signatures against the content and the unchanged prefix).
    assert second.requests[0]["messages"][1]["content"][:2] == blocks
    assert sorted(files.executed) == ["read_file", "search_files", "write_file"]


class _Sink:
    async def emit(self, event):
        return None

    async def is_cancelled(self):
        return False


SIGNATURE = "EXAMPLESIGNATURE" * 8


def _response() -> dict:
    return {"choices": [{
        "index": 0, "text": "", "reasoning": "先读 <b>config.yaml</b>",
        "tool_calls": [{"id": "c1", "name": "read_file", "arguments_raw": "{}", "arguments": {}, "parse_error": None,
                        "truncated": False, "provider_extra": {"extra_content": {"google": {"thought_signature": SIGNATURE}}}}],
        "finish_reason": "tool_calls", "finish_reason_raw": "tool_use",
        "replay": [{"wire": "anthropic", "type": "thinking", "data": {"type": "thinking", "thinking": "先读 <b>config.yaml</b>", "signature": SIGNATURE}}],
    }], "usage": {}}


@pytest.mark.django_db
def test_the_trace_shows_reasoning_and_opaque_sizes_never_the_bytes(cast):
    run = make_run(cast["alice"], response=_response(), request={"wire": {"body": {"messages": [
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "signature": SIGNATURE}]}]}}})
    alice = Client()
    alice.force_login(cast["alice"])
    page = alice.get(f"/c/{run.conversation_id}/").content.decode()
    assert 'data-role="reasoning"' in page
    assert "先读 &lt;b&gt;config.yaml&lt;/b&gt;" in page and "<b>config.yaml</b>" not in page  # escaped
    assert f"thinking: opaque, {len(SIGNATURE)} bytes" in page
    assert f"thought signature of read_file: opaque, {len(SIGNATURE)} bytes" in page
    assert SIGNATURE not in page
    trace = alice.get(f"/api/runs/{run.pk}/trace").content.decode()
    assert SIGNATURE not in trace and f"[opaque, {len(SIGNATURE)} bytes]" in trace
    otto = Client()
    otto.force_login(cast["otto"])
    audit = otto.get(f"/audit/runs/{run.pk}/").content.decode()
    assert SIGNATURE not in audit
    # The raw round is loaded when the auditor opens it.
    raw = otto.get(f"/audit/runs/{run.pk}/rounds/0/").content.decode()
    assert SIGNATURE not in raw and f"opaque, {len(SIGNATURE)} bytes" in raw
    export = b"".join(otto.get("/audit/export.jsonl").streaming_content).decode()
    assert SIGNATURE not in export and json.loads(export.splitlines()[0])["rounds"]
    ada = Client()
    ada.force_login(cast["ada"])
    round_id = Round.objects.get(run=run).pk
    admin_page = ada.get(f"/admin/chatapp/round/{round_id}/change/").content.decode()
    assert admin_page.count("[opaque, 128 bytes]") >= 3 and SIGNATURE not in admin_page
    assert Round.objects.get(run=run).response["choices"][0]["replay"][0]["data"]["signature"] == SIGNATURE
