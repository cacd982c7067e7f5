"""The 000 §6 scenario in a real browser: three rounds, two parallel calls, a write, usage and chart."""

from __future__ import annotations

import pytest

from chatapp.models import Run
from tests.browser.pages import new_conversation

pytestmark = pytest.mark.django_db(transaction=True)

REQUEST = "读取 config.yaml，同时列出当前目录中的 Markdown 文件，然后把分析结果写入 report.md。"


def test_files_scenario_timeline_shows_each_round_live(cast, demo_tools, page_for, artifacts):
    page = page_for("alice", "alice-pass")
    new_conversation(page)
    page.fill("#message", REQUEST)
    page.press("#message", "Enter")
    # While it runs the trace fills in live, without a reload.
    page.locator("[data-role=trace] .call").first.wait_for(state="attached", timeout=60_000)
    page.locator("[data-role=answer]").wait_for(timeout=90_000)
    run = Run.objects.get(conversation__owner=cast["alice"])
    assert run.status == "succeeded" and run.rounds_count == 3

    page.reload()
    article = page.locator(f"#run-{run.pk}")
    article.locator("summary").first.click()
    rounds = article.locator("li.round")
    assert rounds.count() == 3
    first_calls = rounds.nth(0).locator(".call .tool-name").all_inner_texts()
    assert sorted(first_calls) == ["read_file", "search_files"]
    assert rounds.nth(1).locator(".call .tool-name").all_inner_texts() == ["write_file"]
    assert rounds.nth(2).locator(".call").count() == 0
    assert "stop" in rounds.nth(2).locator(".finish").text_content()
    assert "tool_calls" in rounds.nth(0).locator(".finish").text_content()
    for i in range(3):
        prompt = rounds.nth(i).locator("[data-usage=prompt]").text_content().strip()
        assert prompt.isdigit() and int(prompt) > 0
    assert "config.yaml" in rounds.nth(0).locator(".args").first.text_content()
    assert (
        "Qwen3.6-Plus" in rounds.nth(1).locator(".args").text_content()
    )  # the write is built from the reads
    assert "report.md" in article.locator("[data-role=answer]").inner_text()
    page.click("text=Token usage per round")
    assert page.locator("svg.chart rect.prompt").count() == 3
    for theme in ("light", "dark"):
        page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
        page.screenshot(path=str(artifacts / f"chat-desktop-{theme}.png"), full_page=True)
    page.set_viewport_size({"width": 375, "height": 800})
    for theme in ("light", "dark"):
        page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
        page.screenshot(path=str(artifacts / f"chat-375-{theme}.png"), full_page=True)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 380, f"the page scrolls sideways at 375 px ({width} px wide)"
