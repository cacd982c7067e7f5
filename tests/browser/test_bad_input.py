"""Bad input the issue names, as a person would meet it in the chat: a 300-character tool name, 1 MB of
arguments, 200 tool calls in one round, right-to-left and emoji text. The page loads, the timeline
draws every call, nothing runs off the screen on a phone, the huge value is folded, right-to-left
text reads right to left, and the page still answers at once."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from chatapp.models import Conversation, Message, Round, Run, RunEvent, ToolCall

pytestmark = pytest.mark.django_db(transaction=True)

LONG_NAME = "mcp_server_with_a_very_long_name__" + "really_" * 38 + "long_tool"
RTL_EMOJI = "مرحبا بالعالم — שלום עולם 👋🏽 🧪🚀 ✅"
CALLS = 200


def plant(owner) -> Run:
    convo = Conversation.objects.create(owner=owner, title=f"{RTL_EMOJI} {LONG_NAME[:60]}")
    question = Message.objects.create(conversation=convo, role="user", content=RTL_EMOJI, payload={})
    run = Run.objects.create(
        conversation=convo, user_message=question, provider_name="demo", model="clearloop-demo", status="succeeded",
        rounds_count=2, tool_calls_count=CALLS,
    )
    Message.objects.create(conversation=convo, role="assistant", content=RTL_EMOJI, payload={}, run=run)
    t0 = timezone.now()
    events: list[tuple[str, dict, float]] = [("round_started", {"round_index": 0}, 0)]
    events.append(("round_finished", {"round_index": 0, "finish_reason": "tool_calls", "ttft_ms": 20,
                                      "usage": {"prompt_tokens": 900, "completion_tokens": 4000}}, 400))
    for i in range(CALLS):
        name = LONG_NAME if i == 0 else f"tool_{i}_{RTL_EMOJI[:6]}"
        arguments = json.dumps({"blob": "x" * 1_000_000}) if i == 1 else json.dumps({"n": i, "text": RTL_EMOJI})
        ToolCall.objects.create(
            run=run, round_index=0, index=i, call_id=f"c{i}", name=name[:200], arguments=arguments,
            status="succeeded", result=json.dumps({"ok": i}), duration_ms=100 + i,
        )
        events.append(("tool_call", {"round_index": 0, "call_id": f"c{i}", "name": name, "status": "running"}, 410 + i))
        events.append(("tool_call", {"round_index": 0, "call_id": f"c{i}", "name": name, "status": "succeeded",
                                     "duration_ms": 100 + i}, 520 + 2 * i))
    events.append(("round_started", {"round_index": 1}, 1000))
    events.append(("round_finished", {"round_index": 1, "finish_reason": "stop", "ttft_ms": 30}, 1200))
    for seq, (kind, payload, at) in enumerate(events, start=1):
        row = RunEvent.objects.create(run=run, seq=seq, type=kind, payload=payload, durable=True)
        RunEvent.objects.filter(pk=row.pk).update(created_at=t0 + timedelta(milliseconds=at))
    for index in (0, 1):
        Round.objects.create(run=run, index=index, provider_name="demo", model="clearloop-demo",
                             finish_reason="tool_calls" if index == 0 else "stop", usage={})
    return run


def test_long_names_huge_arguments_many_calls_and_rtl_text_keep_the_page_usable(cast, demo_provider, page_for, artifacts):
    run = plant(cast["alice"])
    page = page_for("alice", "alice-pass", {"width": 375, "height": 812})
    started = time.monotonic()
    page.goto(f"/c/{run.conversation_id}/")
    article = page.locator(f"#run-{run.pk}")
    article.locator("[data-role=trace] > summary").click()
    rows = article.locator(".timeline .tl-row")
    expect(rows).to_have_count(CALLS + 2)
    loaded = time.monotonic() - started
    assert loaded < 15, loaded  # 200 calls and a 1 MB argument: the page comes up (folded, see below)
    # Nothing runs off a phone's screen: long names are cut with an ellipsis inside their row.
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 375 + 1
    label = article.locator(".tl-row.tl-call .tl-label").first
    assert label.evaluate("el => el.scrollWidth > el.clientWidth")  # cut, with the whole name in its text
    expect(article.locator(".tl-row.tl-call").first.locator(".visually-hidden")).to_contain_text(LONG_NAME)
    # The 1 MB argument is folded: 2,000 characters shown, the rest behind "show all", capped at 100,000.
    big = article.locator(".call[data-call=c1]")
    assert len(big.locator("pre.args").first.text_content()) <= 2000
    expect(big.locator("details.show-all summary").first).to_contain_text("show all")
    # Right-to-left text reads right to left; emoji survive.
    question = page.locator("[data-role=question]").last
    assert question.evaluate("el => getComputedStyle(el).direction") == "rtl"
    expect(article.locator("[data-role=answer]")).to_contain_text("👋🏽")
    # And the page answers at once.
    began = time.monotonic()
    page.fill("#message", RTL_EMOJI)
    expect(page.locator("#message")).to_have_value(RTL_EMOJI)
    assert time.monotonic() - began < 2
    page.screenshot(path=str(artifacts / "bad-input-375-light.png"), animations="disabled")
