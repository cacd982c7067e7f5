"""A real worker process, killed right after it stored round 1 of a Claude thinking run: the next
worker resumes from PostgreSQL and sends the thinking blocks back with the same bytes (the strict
emulator checks every signature against the block and its unchanged prefix), then finishes the
seed 000 §6 files scenario with the workspace's real file tools."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from chatapp.models import Conversation, ProviderConfig, Round
from chatapp.services.runs import start_run
from tests.durable.harness import check_recovered, wait_run

sys.path.insert(0, str(Path(__file__).parent.parent / "replay"))  # the emulators live there

from replay_anthropic_emulator import AnthropicEmulator  # noqa: E402
from replay_emulator_http import serve_in_thread  # noqa: E402
from replay_seed import FINAL_TEXT, SEED_MESSAGES  # noqa: E402

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

MODEL = "claude-fable-5-1"


def test_worker_killed_after_round_one_resumes_with_the_same_signed_thinking(cast, demo_tools, durable_stack):
    emulator = AnthropicEmulator(require_key=False)
    with serve_in_thread(emulator.app()) as base_url:
        provider = ProviderConfig.objects.create(
            name="claude-emulated", kind="anthropic", preset="anthropic", base_url=base_url, model=MODEL
        )
        durable_stack.start_worker(CLEARLOOP_CRASH_AT="round_finished:1")
        convo = Conversation.objects.create(owner=cast["alice"], provider=provider)
        run = start_run(convo, SEED_MESSAGES[1]["content"])
        killed = durable_stack.wait_worker_died()
        durable_stack.restart_after_kill(killed)
        run = wait_run(run.pk)
    check_recovered(run.pk, demo_tools.outbox)
    assert run.status == "succeeded", (run.error_class, run.error)
    assert run.final_text == FINAL_TEXT
    # Round 2 and 3 were sent by the second worker: they carry round 1's blocks exactly as produced.
    first = Round.objects.get(run=run, index=0).response["choices"][0]["replay"]
    sent = [r for r in emulator.requests if len(r["messages"]) > 1]
    assert len(sent) == 2
    for body in sent:
        assert body["messages"][1]["content"][: len(first)] == [b["data"] for b in first]
    report = demo_tools.workspaces / f"conversation-{convo.pk}" / "report.md"
    assert report.exists()
