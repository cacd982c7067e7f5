"""Hosted-MCP behaviour a person sees: a long tool's progress, live, in the chat page."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from chatapp.models import McpServer, Run, RunEvent, ToolCall, ToolPolicy

pytestmark = pytest.mark.django_db(transaction=True)
HOSTED = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "hosted_features_server.py"

# Every text the "waiting" line shows, from the page's own DOM events.
OBSERVE_WAITING = """
() => {
  window.__waiting = [];
  new MutationObserver(() => {
    document.querySelectorAll('[data-role=waiting]').forEach((el) => {
      const last = window.__waiting[window.__waiting.length - 1];
      if (el.textContent && el.textContent !== last) window.__waiting.push(el.textContent);
    });
  }).observe(document.getElementById('messages'), {subtree: true, childList: true, characterData: true});
}
"""


@pytest.fixture
def hosted_server(demo_provider):
    # One second without a sign of life is all the server's calls get: only progress keeps them going.
    McpServer.objects.update_or_create(
        name="hosted",
        defaults={"command": sys.executable, "args": [str(HOSTED)], "call_timeout": 1.0, "enabled": True},
    )
    ToolPolicy.objects.update_or_create(
        pattern="hosted__*", defaults={"tier": "read_only", "approval": "never"}
    )
    return demo_provider


def test_a_long_tool_shows_its_progress_live_and_outlives_its_idle_timeout(
    cast, hosted_server, page_for, artifacts
):
    page = page_for("alice", "alice-pass")
    page.click("text=New conversation")
    page.wait_for_selector("#composer textarea")
    page.evaluate(OBSERVE_WAITING)
    page.fill("#message", '[[demo:call hosted__index {"steps": 8, "delay": 0.4}]]')
    page.press("#message", "Enter")
    page.locator("[data-role=answer]").wait_for(timeout=90_000)
    seen = page.evaluate("window.__waiting")
    shown = [t for t in seen if re.search(r"Tool hosted__index running: \d+ %, indexing… \(\d+ s\)", t)]
    assert shown, seen
    percents = [int(re.search(r"(\d+) %", t).group(1)) for t in shown]
    assert percents == sorted(percents) and percents[-1] > percents[0]
    run = Run.objects.get(conversation__owner=cast["alice"])
    call = ToolCall.objects.get(run=run)
    # 3.2 s of work against a 1 s idle timeout: it finished because progress pushed the deadline back.
    assert call.status == "succeeded", call.result
    assert '"indexed": 8' in call.result
    frames = RunEvent.objects.filter(run=run, type="tool_progress").order_by("seq")
    assert frames.count() >= 2
    assert frames.last().payload["message"] == "indexing" and frames.last().payload["total"] == 8
    page.screenshot(path=str(artifacts / "mcp-progress.png"))
