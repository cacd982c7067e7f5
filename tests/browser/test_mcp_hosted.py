"""Hosted-MCP behaviour a person sees: a long tool's progress, live, in the chat page."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

from chatapp.models import McpServer, Run, RunEvent, ToolCall, ToolPolicy
from tests.browser.pages import new_conversation

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
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    page.evaluate(OBSERVE_WAITING)
    page.fill("#message", '[[demo:call hosted__index {"steps": 8, "delay": 0.4}]]')
    page.press("#message", "Enter")
    # Live, while the tool still runs: the waiting line shows the server's last report.
    expect(page.locator("[data-role=waiting]")).to_contain_text(
        re.compile(r"\d+ %, indexing…"), timeout=60_000
    )
    page.screenshot(path=str(artifacts / "mcp-progress-live.png"))
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


@pytest.fixture
def legacy_server(demo_provider):
    """A hosted 2025-11-25 server over Streamable HTTP that asks the user to open a link."""
    import subprocess
    import urllib.request

    from tests.mcp.mcp_helpers import free_port, wait_for_port

    port = free_port()
    script = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "legacy_http_server.py"
    proc = subprocess.Popen(
        [sys.executable, str(script), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for_port(port, proc)
    McpServer.objects.update_or_create(
        name="legacy", defaults={"transport": "http", "url": f"http://127.0.0.1:{port}/mcp", "enabled": True}
    )
    ToolPolicy.objects.update_or_create(
        pattern="legacy__*", defaults={"tier": "read_only", "approval": "never"}
    )

    def stats() -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/admin/stats") as response:
            import json

            return json.load(response)

    yield port, stats
    proc.terminate()
    proc.wait(10)


@pytest.mark.parametrize("answer", ["open", "decline"])
def test_a_servers_link_is_shown_safely_and_the_call_waits_for_the_user(
    cast, legacy_server, page_for, artifacts, answer
):
    port, stats = legacy_server
    page = page_for("alice", "alice-pass")
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    page.fill("#message", "[[demo:call legacy__connect_account {}]]")
    page.press("#message", "Enter")
    opener = page.locator("[data-role=link-open]")
    opener.wait_for(timeout=60_000)
    href = opener.get_attribute("href")
    assert href.startswith(f"http://127.0.0.1:{port}/connect?flow=elicit-")
    assert opener.get_attribute("target") == "_blank"
    assert opener.get_attribute("rel") == "noopener noreferrer"
    assert page.locator("[data-role=link-url]").inner_text() == href  # the full URL, as text
    assert page.locator("[data-role=link-host]").inner_text() == "127.0.0.1"
    assert "Connect your Example account to continue." in page.locator("[data-role=links]").inner_text()
    assert "link below" in page.locator("[data-role=waiting]").inner_text()
    assert stats()["visits"] == 0  # shown, never fetched by clearloop
    page.screenshot(path=str(artifacts / f"mcp-link-{answer}.png"))
    if answer == "open":
        with page.expect_popup() as popup:
            opener.click()
        popup.value.wait_for_load_state()
        assert "Example account connected" in popup.value.content()
    else:
        page.click("[data-role=link-decline]")
    page.locator("[data-role=answer]").wait_for(timeout=60_000)
    run = Run.objects.get(conversation__owner=cast["alice"])
    call = ToolCall.objects.get(run=run)
    expected = "accept" if answer == "open" else "decline"
    assert call.status == "succeeded" and f'"action": "{expected}"' in call.result, call.result
    link = run.links.get()
    assert (
        link.state == ("accepted" if answer == "open" else "declined") and link.answered_by == cast["alice"]
    )
    assert stats()["visits"] == (1 if answer == "open" else 0)
    assert ("Opened" if answer == "open" else "Declined") in page.locator("[data-role=links]").inner_text()
