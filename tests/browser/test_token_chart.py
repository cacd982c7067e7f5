"""The token chart reads on its own: a legend whose swatches have the bars' colours, completion bars
that stay visible beside prompts a hundred times larger, round labels, the numbers on hover, and the
same numbers as a table for screen readers."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chatapp.models import Conversation, Message, Round, Run

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_chart_has_a_coloured_legend_visible_bars_and_a_table(cast, demo_provider, page_for, artifacts):
    convo = Conversation.objects.create(owner=cast["alice"], title="usage")
    question = Message.objects.create(conversation=convo, role="user", content="hi", payload={})
    run = Run.objects.create(conversation=convo, user_message=question, provider_name="demo", model="m", status="succeeded")
    Message.objects.create(conversation=convo, role="assistant", content="done", payload={}, run=run)
    usages = [(4210, 40, 3900, 260), (5100, 12, 4200, 0), (6400, 380, 0, 0)]
    for i, (prompt, completion, read, written) in enumerate(usages):
        Round.objects.create(run=run, index=i, provider_name="demo", model="m", finish_reason="stop", usage={
            "prompt_tokens": prompt, "completion_tokens": completion, "cached_tokens": read, "cache_write_tokens": written})
    page = page_for("alice", "alice-pass", {"width": 1440, "height": 900})
    page.goto(f"/c/{convo.pk}/")
    page.locator("details.usage-chart > summary").click()
    chart = page.locator("[data-role=usage-chart]")
    expect(chart).to_be_visible()
    # The legend's swatches are the bars' colours, three different ones.
    colours = page.evaluate("""() => {
      const fill = (sel) => { const el = document.querySelector(sel); const s = getComputedStyle(el); return [s.fill, s.opacity]; };
      const swatch = (sel) => { const s = getComputedStyle(document.querySelector(sel)); return [s.backgroundColor, s.opacity]; };
      return {bars: [fill('.chart .prompt'), fill('.chart .cached'), fill('.chart .completion')],
              legend: [swatch('.chart-legend .prompt'), swatch('.chart-legend .cached'), swatch('.chart-legend .completion')]};
    }""")
    assert [b[1] for b in colours["bars"]] == [s[1] for s in colours["legend"]]
    assert len({tuple(s) for s in colours["legend"]}) == 3
    # A 12-token completion on top of a 5,100-token prompt is still a visible bar.
    heights = [float(h) for h in chart.locator("rect.completion").evaluate_all("els => els.map(e => e.getAttribute('height'))")]
    assert min(heights) >= 2
    expect(chart.locator("text.tick")).to_have_text([f"{run.pk}.{i}" for i in (1, 2, 3)])
    expect(chart.locator("g title").first).to_contain_text("4,210 prompt (3,900 cache read, 260 cache write) + 40 completion tokens")
    table = page.locator("[data-role=usage-table]")
    expect(table.locator("caption")).to_have_text("Tokens per round")
    expect(table.locator("tbody tr")).to_have_count(3)
    expect(table.locator("tbody tr").nth(1)).to_contain_text("5,100")
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.locator("details.usage-chart").screenshot(path=str(artifacts / f"token-chart-1440-{scheme}.png"))
    page.set_viewport_size({"width": 375, "height": 812})  # the table for screen readers takes no room
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 376
