"""Issue 10, "Done when": a DeepSeek V4, a Claude thinking model, a Gemini 3 model and an OpenAI
reasoning model on Responses each complete the seed 000 §6 three-round files scenario against their
strict emulators, through the real app: a real worker process, killed right after it stored round 1,
a new worker resuming from PostgreSQL, the workspace's real file tools. Then:

* every later request carries what the provider requires back, exactly as stored (the emulators
  reject anything else with the documented 400, so a finished run already says so);
* the Anthropic requests carry cache breakpoints (tools, system, the last message);
* the chat trace shows each round's reasoning text and its sealed parts as "opaque, N bytes", the
  cached tokens per round (read, and written for Anthropic) and the cost per round from the price
  table;
* a second question in the same conversation sends none of the first turn's reasoning back (the
  earlier turn is its question and final answer; DeepSeek requires reasoning only for turns that
  hold tool calls, and the others accept older turns without it).
"""

from __future__ import annotations

import html
import re
import sys
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from chatapp.costs import round_label
from chatapp.models import Conversation, ModelPrice, ProviderConfig, Round
from chatapp.services.runs import start_run
from tests.durable.harness import check_recovered, wait_run

sys.path.insert(0, str(Path(__file__).parent.parent / "replay"))  # the emulators live there

from replay_anthropic_emulator import AnthropicEmulator  # noqa: E402
from replay_chat_emulators import DeepSeekEmulator, GeminiEmulator  # noqa: E402
from replay_emulator_http import serve_in_thread  # noqa: E402
from replay_responses_emulator import ResponsesEmulator  # noqa: E402
from replay_seed import FINAL_TEXT, SEED_MESSAGES, reasoning_for  # noqa: E402

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]


@dataclass(frozen=True)
class Case:
    emulator: Any
    kind: str
    preset: str
    model: str
    path: str  # appended to the emulator's URL for the provider's base URL
    reasoning_text: bool  # the provider hands out readable reasoning (Gemini's endpoint does not here)


CASES = {
    "deepseek-v4": Case(DeepSeekEmulator, "openai_chat", "deepseek", "deepseek-v4-pro", "/v1", True),
    "claude-thinking": Case(
        lambda: AnthropicEmulator(require_key=False), "anthropic", "anthropic", "claude-fable-5-1", "", True
    ),
    "gemini-3": Case(GeminiEmulator, "openai_chat", "gemini", "gemini-3-pro-preview", "/v1", False),
    "openai-responses": Case(ResponsesEmulator, "openai_responses", "openai_responses", "gpt-5.2", "/v1", True),
}


def _replayed(case: Case, body: dict[str, Any], rounds: list[Round]) -> list[Any]:
    """What a later request carries back for each earlier round, in the provider's own place."""
    if case.preset == "deepseek":
        return [m["reasoning_content"] for m in body["messages"] if m["role"] == "assistant"]
    if case.preset == "anthropic":
        assistants = [m["content"] for m in body["messages"] if m["role"] == "assistant"]
        return [[b for b in content if b["type"] in ("thinking", "redacted_thinking")] for content in assistants]
    if case.preset == "gemini":
        assistants = [m for m in body["messages"] if m["role"] == "assistant"]
        return [{"extra_content": m["tool_calls"][0]["extra_content"]} for m in assistants]
    return [[i] for i in body["input"] if i.get("type") == "reasoning"]


def _carries_replay(message: dict[str, Any]) -> bool:
    """An assistant message (or Responses item) that carries reasoning or sealed parts."""
    if {"reasoning_content", "reasoning", "reasoning_details", "tool_calls"} & set(message):
        return True
    if message.get("type") == "reasoning":
        return True
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking", "tool_use") for b in content
    )


def _stored(case: Case, response: dict[str, Any]) -> Any:
    choice = response["choices"][0]
    if case.preset == "deepseek":
        return choice["reasoning"]
    if case.preset == "gemini":
        return choice["tool_calls"][0]["provider_extra"]
    return [b["data"] for b in choice["replay"]]


def _opaque_lines(case: Case, response: dict[str, Any]) -> list[str]:
    """The trace's line for each sealed part of a stored round (sizes from the stored bytes)."""
    choice = response["choices"][0]
    lines = []
    for block in choice.get("replay") or ():
        data = block["data"]
        sealed = data.get("signature") or data.get("encrypted_content") or data.get("data") or ""
        lines.append(f"{block['type']}: opaque, {len(sealed.encode())} bytes (sent back unchanged)")
    for call in choice.get("tool_calls") or ():
        extra = call.get("provider_extra") or {}
        signature = ((extra.get("extra_content") or {}).get("google") or {}).get("thought_signature")
        if signature:
            lines.append(f"thought signature of {call['name']}: opaque, {len(signature.encode())} bytes")
    return lines


@pytest.mark.parametrize("name", list(CASES))
def test_reasoning_model_completes_the_seed_scenario_resumed_with_reasoning_cache_and_cost_in_the_trace(
    name, cast, demo_tools, durable_stack
):
    case = CASES[name]
    emulator = case.emulator()
    with serve_in_thread(emulator.app()) as base_url:
        provider = ProviderConfig.objects.create(
            name=f"{name}-emulated", kind=case.kind, preset=case.preset, base_url=base_url + case.path,
            model=case.model,
        )
        ModelPrice.objects.create(
            provider=provider, model="", input=Decimal("3"), output=Decimal("15"), cached_read=Decimal("0.3"),
            cache_write=Decimal("3.75"), reasoning=Decimal("15"),
        )
        durable_stack.start_worker(CLEARLOOP_CRASH_AT="round_finished:1")
        convo = Conversation.objects.create(owner=cast["alice"], provider=provider)
        run = start_run(convo, SEED_MESSAGES[1]["content"])
        killed = durable_stack.wait_worker_died()
        durable_stack.restart_after_kill(killed)
        run = wait_run(run.pk)
        first_turn = len(emulator.requests)
        if run.status == "succeeded":
            second = wait_run(start_run(convo, "再读一次 config.yaml，然后更新报告。").pk)
    check_recovered(run.pk, demo_tools.outbox)
    assert run.status == "succeeded", (run.error_class, run.error)
    assert run.final_text == FINAL_TEXT
    report = demo_tools.workspaces / f"conversation-{convo.pk}" / "report.md"
    assert report.exists()
    assert run.deliveries >= 2  # the kill really interrupted it

    # A second question: its first request holds turn 1 as question and final answer only.
    assert second.status == "succeeded", (second.error_class, second.error)
    opening = emulator.requests[first_turn]
    history = opening.get("messages") or opening.get("input")
    earlier = [m for m in history if m.get("role") == "assistant" or m.get("type") == "reasoning"]
    assert len(earlier) == 1 and not _carries_replay(earlier[0]), earlier
    assert FINAL_TEXT in str(earlier[0]["content"])

    rounds = list(Round.objects.filter(run=run).order_by("index"))
    emulator.requests[first_turn:] = []  # the checks below are about the first run
    assert len(rounds) == 3
    # Replayed: rounds 2 and 3 were asked by the second worker; each carries every earlier round's
    # reasoning or sealed parts exactly as PostgreSQL kept them.
    later = [b for b in emulator.requests if len(_replayed(case, b, rounds))]
    assert len(later) == 2
    for number, body in enumerate(later, start=1):
        assert _replayed(case, body, rounds) == [_stored(case, r.response) for r in rounds[:number]]
    if case.preset == "anthropic":
        for body in emulator.requests:  # breakpoints on the tools, the system block, the last message
            assert "cache_control" in body["tools"][-1]
            assert "cache_control" in body["system"][-1]
            assert any("cache_control" in b for b in body["messages"][-1]["content"])
    if case.preset == "openai_responses":
        for body in emulator.requests:
            assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
            assert all(t["strict"] is False for t in body["tools"])

    # The trace, as the conversation's owner sees it.
    alice = Client()
    alice.force_login(cast["alice"])
    whole = alice.get(f"/c/{convo.pk}/").content.decode()
    page = whole[whole.index(f'id="run-{run.pk}"') : whole.index(f'id="run-{second.pk}"')]
    for index, r in enumerate(rounds):
        if case.reasoning_text:
            assert r.response["choices"][0]["reasoning"] == reasoning_for((0, 2, 3)[index])
            assert html.escape(reasoning_for((0, 2, 3)[index])) in page, index
        for line in _opaque_lines(case, r.response):
            assert line in page, (index, line)
    if case.preset != "deepseek":
        assert "opaque," in page  # every one of these has sealed parts; DeepSeek's reasoning is text
    assert page.count('data-role="reasoning"') == (3 if case.reasoning_text else 2)

    reads = [int(v) for v in re.findall(r'data-usage="cache-read">(\d+)<', page)]
    assert reads == [r.usage["cached_tokens"] for r in rounds]
    assert reads[0] == 0 and reads[1] > 0 and reads[2] > reads[1]  # the prefix grows, and is read
    if case.preset == "anthropic":
        writes = [int(v) for v in re.findall(r'data-usage="cache-write">(\d+)<', page)]
        assert writes == [r.usage["cache_write_tokens"] for r in rounds] and writes[0] > 0
    costs = re.findall(r'data-role="round-cost">([^<]*)<', page)
    assert costs == [round_label(r) for r in rounds]
    assert all(r.cost is not None and r.cost > 0 for r in rounds)
    assert all(c.startswith("USD ") for c in costs), costs
