"""A run's redraws share their fragment requests (static/js/chat.js ``fragmentText``): at most one per
run in flight, those asked meanwhile served by the next. A 3-round run with 3 tool calls had asked
for 16 fragments at once, rendered one after another, and its Stop stayed ~0.5-1.5 s after the badge
said "Succeeded"."""

from __future__ import annotations

import pytest

from chatapp.models import Run
from tests.browser.pages import new_conversation

pytestmark = pytest.mark.django_db(transaction=True)

REQUEST = "读取 config.yaml，同时列出当前目录中的 Markdown 文件，然后把分析结果写入 report.md。"


def test_one_fragment_request_per_run_at_a_time_and_the_end_drawn_from_a_fresh_one(
    cast, demo_tools, page_for
):
    page = page_for("alice", "alice-pass")
    events: list[tuple[str, str]] = []  # ("start" | "end", url), in the order the page made them
    page.on("request", lambda r: events.append(("start", r.url)) if "/fragment/" in r.url else None)
    for done in ("requestfinished", "requestfailed"):
        page.on(done, lambda r: events.append(("end", r.url)) if "/fragment/" in r.url else None)
    new_conversation(page)
    page.fill("#message", REQUEST)
    page.press("#message", "Enter")
    page.locator("[data-role=answer]").wait_for(timeout=90_000)
    run = Run.objects.get(conversation__owner=cast["alice"])
    article = page.locator(f"#run-{run.pk}")
    article.locator(".stop").wait_for(state="detached", timeout=10_000)  # drawn from the finished run
    assert run.status == "succeeded" and run.rounds_count == 3
    assert "3" in article.locator("[data-role=trace] summary").first.inner_text()

    starts = [url for kind, url in events if kind == "start"]
    assert starts and all(f"/runs/{run.pk}/fragment/" in url for url in starts)
    in_flight = most = 0
    for kind, _ in events:
        in_flight += 1 if kind == "start" else -1
        most = max(most, in_flight)
    assert most == 1, events
    assert len(starts) <= 8, starts  # 16 before, each frame its own request
