"""The run timeline: rounds and tool calls on one time axis, the seed 000 §6 parallel reads drawn
overlapping, rows that open their call's labelled Arguments and Result, an open trace that stays open
when the run finishes, and 500 rounds drawn in under a second."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

from chatapp.models import McpServer, Run, ToolPolicy
from tests.browser.pages import new_conversation

pytestmark = pytest.mark.django_db(transaction=True)

REQUEST = "读取 config.yaml，同时列出当前目录中的 Markdown 文件，然后把分析结果写入 report.md。"


def test_the_files_scenario_draws_the_parallel_reads_overlapping(cast, demo_tools, page_for, artifacts):
    page = page_for("alice", "alice-pass", {"width": 1440, "height": 900})
    new_conversation(page)
    page.fill("#message", REQUEST)
    page.press("#message", "Enter")
    trace_summary = page.locator("[data-role=trace] > summary").first
    trace_summary.wait_for(timeout=60_000)
    trace_summary.click()  # opened while the run goes on: it must stay open when it finishes
    # Round 1 opens itself once its calls exist; the person closes it while the run goes on.
    first_round = page.locator('li.round[data-round="0"] > details')
    expect(first_round).to_have_attribute("open", "", timeout=60_000)
    first_round.locator("> summary").click()
    page.locator("[data-role=answer]").wait_for(timeout=90_000)
    run = Run.objects.get(conversation__owner=cast["alice"])
    article = page.locator(f"#run-{run.pk}")
    expect(article.locator("[data-role=trace]")).to_have_attribute("open", "")
    # Through every live re-render and the finish, what the person closed stays closed.
    expect(article.locator('li.round[data-round="0"] > details')).not_to_have_attribute("open", "")
    article.locator('li.round[data-round="0"] > details > summary').click()  # opened again to check below

    data = json.loads(page.locator(f"#timeline-data-{run.pk}").text_content())
    rounds = [r for r in data["rows"] if r["kind"] == "round"]
    calls = {r["label"]: r for r in data["rows"] if r["kind"] == "call"}
    assert len(rounds) == 3 and set(calls) == {"read_file", "search_files", "write_file"}
    read, search = calls["read_file"], calls["search_files"]
    assert read["start"] < search["end"] and search["start"] < read["end"], (read, search)  # parallel
    assert calls["write_file"]["start"] >= max(read["end"], search["end"])  # the next round's call
    rows = article.locator(".timeline .tl-row")
    expect(rows).to_have_count(6)
    assert "read_file: from" in article.locator(".tl-row.tl-call").first.locator(
        ".visually-hidden"
    ).text_content() or (
        "search_files: from"
        in article.locator(".tl-row.tl-call").first.locator(".visually-hidden").text_content()
    )
    article.locator(".tl-row.tl-call", has_text="write_file").locator("button").click()
    call = article.locator(".call", has=page.locator("code.tool-name", has_text="write_file"))
    expect(call.locator(".pane-label").first).to_have_text("Arguments")
    expect(call.locator(".pane-label").nth(1)).to_contain_text("Result")
    expect(call).to_be_in_viewport()
    # The Result pane is for people (no anchor line); the exact text the model saw is one toggle away.
    expect(call.locator("pre.result").first).not_to_contain_text("[Tool")
    raw = call.locator("[data-role=raw-result]")
    expect(raw.locator("pre")).to_be_hidden()
    raw.locator("summary").click()
    expect(raw.locator("pre")).to_contain_text('[Tool "write_file"')
    # Token counts of each round are in the row's text (and its tooltip), not only in the trace.
    first_round = article.locator(".tl-row.tl-round").first.locator(".visually-hidden")
    expect(first_round).to_contain_text(re.compile(r"[\d,]+ prompt / [\d,]+ completion tokens"))
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        article.screenshot(path=str(artifacts / f"timeline-1440-{scheme}.png"))
    page.set_viewport_size({"width": 375, "height": 812})
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        article.locator(".timeline").screenshot(path=str(artifacts / f"timeline-375-{scheme}.png"))


BIG = """
() => {
  const rows = [];
  for (let i = 0; i < 500; i++) {
    rows.push({kind: "round", key: "round-" + i, label: "Round " + (i + 1), round: i, start: i * 100, end: i * 100 + 60,
               ttft: 20, finish: "tool_calls"});
    rows.push({kind: "call", key: "call-" + i, call_id: "c" + i, label: "tool_" + i, round: i, start: i * 100 + 60,
               end: i * 100 + 90, wait: null, status: "succeeded", attempts: 1});
  }
  const el = document.createElement("div");
  document.body.appendChild(el);
  const started = performance.now();
  window.clearloopTimeline.render(el, {total_ms: 50000, rows: rows});
  el.getBoundingClientRect();  // include the layout the browser has to do
  return {ms: performance.now() - started, rows: el.querySelectorAll(".tl-row").length};
}
"""


def test_five_hundred_rounds_render_in_under_a_second(cast, demo_provider, page_for):
    page = page_for("alice", "alice-pass")
    new_conversation(page)
    page.wait_for_selector("#composer")
    result = page.evaluate(BIG)
    assert result["rows"] == 1000
    assert result["ms"] < 1000, result


HOSTED = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "hosted_features_server.py"
# Two different argument sets: the loop refuses the same call twice in one round (a duplicate).
TWO_SLOW_CALLS = '[[demo:call hosted__silent {"seconds": 0.3}]] [[demo:call hosted__silent {"seconds": 0.301}]]'


@pytest.fixture
def slow_tool(demo_provider):
    """A real MCP server (stdio) whose ``silent`` tool works for the given seconds."""
    McpServer.objects.update_or_create(
        name="hosted", defaults={"command": sys.executable, "args": [str(HOSTED)], "enabled": True}
    )
    ToolPolicy.objects.update_or_create(pattern="hosted__*", defaults={"tier": "read_only", "approval": "never"})
    return demo_provider


def _send(page, text):
    new_conversation(page)
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    page.wait_for_load_state("load")
    page.fill("#message", text)
    page.press("#message", "Enter")
    page.locator("[data-role=answer]").wait_for(timeout=90_000)


def test_seed_004_7_2_two_300_ms_calls_overlap_and_take_less_than_in_series(cast, slow_tool, page_for, artifacts):
    page = page_for("alice", "alice-pass", {"width": 1440, "height": 900})
    _send(page, TWO_SLOW_CALLS)
    run = Run.objects.get(conversation__owner=cast["alice"])
    data = json.loads(page.locator(f"#timeline-data-{run.pk}").text_content())
    calls = [r for r in data["rows"] if r["kind"] == "call"]
    assert [c["status"] for c in calls] == ["succeeded", "succeeded"], calls
    a, b = calls
    assert a["took"] >= 300 and b["took"] >= 300  # each did its 300 ms of work
    assert a["start"] < b["end"] and b["start"] < a["end"], calls  # drawn at the same time
    # Executed at the same time, by the engine's own clock: each call ran from its start (the engine's
    # stamp) for the time it measured. The stored ends also hold the storing of the results, which a
    # loaded machine (two test processes, two browsers) delayed by 400 ms once: not the calls' time.
    (a0, a1), (b0, b1) = ((c["start"], c["start"] + c["took"]) for c in calls)
    assert a0 < b1 and b0 < a1, calls  # in series, one would start only once the other had ended
    span = max(a1, b1) - min(a0, b0)
    assert span < a["took"] + b["took"], (span, calls)  # §7.2: parallel (~380 ms), not serial (620 ms)
    # The page draws them overlapping: the two green bars share a stretch of the axis.
    article = page.locator(f"#run-{run.pk}")
    article.locator("[data-role=trace] > summary").click()
    bars = article.locator(".tl-row.tl-call .tl-bar.tl-call")
    expect(bars).to_have_count(2)
    first, second = bars.nth(0).bounding_box(), bars.nth(1).bounding_box()
    assert first["x"] < second["x"] + second["width"] and second["x"] < first["x"] + first["width"]
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        article.locator(".timeline").screenshot(path=str(artifacts / f"timeline-parallel-1440-{scheme}.png"))


def test_a_retried_model_request_is_drawn_as_its_own_segment(cast, demo_provider, page_for, artifacts):
    page = page_for("alice", "alice-pass", {"width": 1440, "height": 900})
    _send(page, "hello [[demo:500]]")  # the demo model answers the first request with a 500
    run = Run.objects.get(conversation__owner=cast["alice"])
    data = json.loads(page.locator(f"#timeline-data-{run.pk}").text_content())
    (round_row,) = [r for r in data["rows"] if r["kind"] == "round"]
    (retry,) = round_row["retries"]
    assert retry["error"] == "TransientUpstream" and retry["wait"] > 0
    assert round_row["start"] <= retry["at"] <= round_row["end"]
    article = page.locator(f"#run-{run.pk}")
    article.locator("[data-role=trace] > summary").click()
    row = article.locator(".tl-row.tl-round")
    expect(row.locator(".tl-retry")).to_have_count(1)
    expect(row.locator(".tl-backoff")).to_have_count(1)
    expect(row.locator(".visually-hidden")).to_contain_text("attempt 1 failed (TransientUpstream), sent again after")
    expect(row.locator("button")).to_have_attribute("title", re.compile("attempt 1 failed"))
    article.locator(".timeline").screenshot(path=str(artifacts / "timeline-retry-1440-light.png"))
