"""Opening a long conversation in Chromium: what the browser spends between the page's HTML and a live
page (``bench.page.run --open N``). The server's share is measured in process by
``tests/web/test_page_statements.py``'s statements and session 24's CPU figures; this is the rest:
parsing, htmx's processing of the page, the scripts (the runs' waterfalls), style and layout."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx

from bench.browser.client import BrowserUser
from bench.pageview.answers import ROUND_EVENTS, realistic, round_of

# Chromium's own counters for the page (DevTools ``Performance.getMetrics``): the renderer's main
# thread since the document started, here until its socket is live.
METRICS = ("ScriptDuration", "LayoutDuration", "RecalcStyleDuration", "TaskDuration")

# The navigation's steps, ms from its start (Navigation Timing), and the HTML's size.
NAVIGATION = (
    "() => { const n = performance.getEntriesByType('navigation')[0];"
    " return {response: n.responseStart, html_end: n.responseEnd, interactive: n.domInteractive,"
    " dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd, html_kb: n.decodedBodySize / 1024,"
    " elements: document.getElementsByTagName('*').length,"
    " hx: document.querySelectorAll('[hx-post],[hx-get]').length}; }"
)


async def conversation_of(stack: Any, exchanges: int, timeout: float, answers: str = "plain") -> int:
    """A conversation of the first bench user with ``exchanges`` answered questions: ``plain``, 200
    tokens each through the fake upstream; ``realistic``, answers shaped like a real model's
    (``bench/pageview/answers.py``: code, tables, lists), each with its round and events, written
    straight to the database."""
    t = stack.target
    if answers == "realistic":
        spec = stack.data_root / "answered.json"
        texts: list[str] = []
        rounds: list[dict[str, Any]] = []
        history: list[dict[str, str]] = []
        for i in range(exchanges):
            texts.append(realistic(i))
            history += [
                {"role": "user", "content": f"question {i}"},
                {"role": "assistant", "content": texts[-1]},
            ]
            rounds.append(round_of(history, i))
        spec.write_text(
            json.dumps({"owner": t.users[0][0], "answers": texts, "rounds": rounds, "events": ROUND_EVENTS})
        )
        return t.seed("answered", str(spec))["conversation"]
    convo = t.seed("conversations", str(t.users[0][0]))["conversations"][0]
    user = BrowserUser(t.base_url, t.users[0][1], convo, timeout)
    await user.connect()
    async with httpx.AsyncClient(base_url=t.base_url, timeout=timeout) as http:
        for _ in range(exchanges):
            rid = "o" + uuid.uuid4().hex[:10]
            await user.message(http, rid, f"Say something. rid={rid} delay=0 tokens=200")
    await user.close()
    return convo


async def open_once(page: Any, cdp: Any, base: str, convo: int) -> dict[str, float]:
    """One load of the conversation's page in the same tab, as a click in the list opens it (the static
    files cached, the renderer warm): the navigation's steps and Chromium's main-thread time from the
    click until the socket is live."""
    await page.goto(f"{base}/c/{convo}/")
    await page.wait_for_function(
        "() => { const s = document.getElementById('ws-state'); return s && s.dataset.state === 'live'; }"
    )
    got = await page.evaluate(NAVIGATION)
    spent = await main_thread(cdp)
    return got | {name: spent[name] * 1000 for name in METRICS}


async def main_thread(cdp: Any) -> dict[str, float]:
    """Chromium's counters for the tab's document, seconds since it started (each navigation starts
    them again)."""
    return {m["name"]: m["value"] for m in (await cdp.send("Performance.getMetrics"))["metrics"]}


async def measure_open(
    browser: Any, stack: Any, exchanges: int, loads: int, timeout: float, answers: str = "plain"
) -> dict[str, Any]:
    t = stack.target
    convo = await conversation_of(stack, exchanges, timeout, answers)
    base, session = t.base_url, t.users[0][1]
    context = await browser.new_context(viewport={"width": 1440, "height": 900})
    await context.add_cookies([{"name": "sessionid", "value": session, "url": base}])
    page = await context.new_page()
    cdp = await context.new_cdp_session(page)
    await cdp.send("Performance.enable")
    for _ in range(2):  # warms the cache, the renderer and the server
        await open_once(page, cdp, base, convo)
    rows = [await open_once(page, cdp, base, convo) for _ in range(loads)]
    await context.close()
    keys = list(rows[0])
    return {
        "exchanges": exchanges,
        "answers": answers,
        "loads": loads,
        "p50": {k: round(sorted(r[k] for r in rows)[len(rows) // 2], 1) for k in keys},
    }


def print_open(result: dict[str, Any]) -> None:
    p50 = result["p50"]
    print(
        f"\nopening a conversation of {result['exchanges']} exchanges"
        f" ({result.get('answers', 'plain')} answers), p50 of {result['loads']} loads"
        f" ({p50['html_kb']:.0f} KB of HTML, {p50['elements']:.0f} elements, {p50['hx']:.0f} htmx requests):"
    )
    print(
        "    ms from the navigation's start: "
        + ", ".join(f"{k} {p50[k]}" for k in ("response", "html_end", "interactive", "dcl", "load"))
    )
    print("    Chromium's main thread, ms: " + ", ".join(f"{k} {p50[k]}" for k in METRICS))
