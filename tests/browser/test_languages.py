"""The Chinese UI in a real browser (issue 12 item 7): a browser that asks for zh-CN gets the chat page,
its live parts drawn by JavaScript (connection state, timeline, badges) and the audit pages in
Simplified Chinese with no English word left; the demo model answers in Chinese; the language menu
switches to English and the choice follows the person to their next login. Screenshots at 1440 and
375 px, light and dark, go to test-artifacts/."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chatapp.models import Run, UserPreference
from tests.web.test_translations import ALLOWED, english_in

pytestmark = pytest.mark.django_db(transaction=True)

REQUEST = "读取 config.yaml，同时列出当前目录中的 Markdown 文件，然后把分析结果写入 report.md。"
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 375, "height": 812}

# Text a person reads, as the browser shows it: visible text nodes and the attributes screen readers
# and tooltips read. What the user typed, what the model and tools produced (answers, arguments,
# results, code) and names (conversation titles, tool names) are content, not UI.
VISIBLE_TEXT = """() => {
  const skip = "script, style, code, pre, template, [data-role=answer], [data-role=question], [data-role=stream], [data-role=draft]," +
    " .conversations a, .tool-name, .server-name, .args, .result, .examples span, .reasoning-text, .who, .audit .text";
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, el = node.parentElement;
    if (!node.textContent.trim() || el.closest(skip) || !el.checkVisibility()) continue;
    out.push(node.textContent);
  }
  document.querySelectorAll("[placeholder], [aria-label], [title]").forEach(function (el) {
    if (el.closest(skip)) return;
    ["placeholder", "aria-label", "title"].forEach(function (a) { if (el.getAttribute(a)) out.push(el.getAttribute(a)); });
  });
  return out;
}"""


@pytest.fixture
def zh_page_for(browser, live_stack):
    contexts = []

    def make(username: str, viewport: dict = DESKTOP, locale: str = "zh-CN"):
        context = browser.new_context(base_url=live_stack.base_url, viewport=viewport, locale=locale)
        contexts.append(context)
        page = context.new_page()
        page.goto("/login/")
        expect(page.locator("html")).to_have_attribute("lang", "zh-hans" if locale.startswith("zh") else "en")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", f"{username}-pass")
        page.click("[data-role=password-login] button[type=submit]")
        page.wait_for_url(lambda url: "/login/" not in url)
        return page

    yield make
    for context in contexts:
        context.close()


def english_on(page, allowed=ALLOWED) -> str:
    """The English words left, each with the text it was found in (to find the template)."""
    found = []
    for chunk in page.evaluate(VISIBLE_TEXT):
        words = english_in([chunk], allowed)
        if words:
            found.append(f"{' '.join(words)} (in {chunk.strip()[:80]!r})")
    return "; ".join(found)


def shoot(page, artifacts, name: str) -> None:
    for viewport, width in ((DESKTOP, 1440), (PHONE, 375)):
        page.set_viewport_size(viewport)
        # The drawer slides away when the page becomes phone-sized: shoot once it has settled.
        page.wait_for_function("() => document.getAnimations().every(a => a.playState !== 'running')")
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            page.screenshot(path=str(artifacts / f"zh-{name}-{width}-{scheme}.png"), full_page=width == 375)
    page.set_viewport_size(DESKTOP)
    page.emulate_media(color_scheme="light")


def test_the_chat_page_in_chinese_with_its_live_parts(cast, demo_tools, zh_page_for, artifacts, settings):
    page = zh_page_for("alice")
    expect(page.locator("textarea#message")).to_have_attribute(
        "placeholder", "输入消息（Enter 发送，Shift+Enter 换行；拖入或粘贴文件即可附加）"
    )
    page.fill("#message", REQUEST)
    page.press("#message", "Enter")
    page.wait_for_url("**/c/*/")
    expect(page.locator("#ws-state")).to_have_text("实时", timeout=30_000)  # drawn by chat.js
    page.locator("[data-role=answer]").wait_for(timeout=120_000)
    run = Run.objects.get(conversation__owner=cast["alice"])
    assert run.status == "succeeded"
    # The demo model answered in the language of the question.
    answer = page.locator("[data-role=answer]").inner_text()
    assert "分析完成" in answer, answer
    article = page.locator(f"#run-{run.pk}")
    expect(article.locator("[data-role=status]")).to_have_text("已完成")
    trace = article.locator("[data-role=trace]")
    trace.locator("summary").first.click()
    expect(trace.locator("summary").first).to_contain_text("轨迹：3 轮")
    # The timeline is drawn by timeline.js: its rows and its screen-reader text are Chinese too.
    expect(trace.locator(".tl-row").first).to_contain_text("第 1 轮")
    expect(trace.locator(".tl-axis")).to_contain_text("轮次：先等待首个")
    shoot(page, artifacts, "chat")  # as a person sees it: the trace open, the rest folded
    # Everything folded is read too: the rounds, the files, the tools menu, the edit box.
    page.evaluate("document.querySelectorAll('details:not(.context):not(.share-details)').forEach(d => d.open = true)")
    allowed = ALLOWED | {settings.COST_CURRENCY.lower(), "stop", "tool_calls", *settings.UPLOAD_ALLOWED_TYPES}
    assert english_on(page, allowed) == ""
    page.goto("/")
    assert english_on(page, allowed | {"sql", "stdio"}) == ""
    shoot(page, artifacts, "home")


def test_the_audit_pages_in_chinese(cast, demo_provider, zh_page_for, artifacts, settings):
    owner = zh_page_for("alice")
    owner.fill("#message", "你好，今天怎么样？")
    owner.press("#message", "Enter")
    owner.locator("[data-role=answer]").wait_for(timeout=120_000)
    assert "我是 clearloop 的演示模型" in owner.locator("[data-role=answer]").inner_text()
    run = Run.objects.get(conversation__owner=cast["alice"])
    page = zh_page_for("otto")
    allowed = ALLOWED | {settings.COST_CURRENCY.lower(), "stop", "jsonl", "opentelemetry", "id"}
    for url, name in (("/audit/", "audit-runs"), (f"/audit/runs/{run.pk}/", "audit-run"), ("/audit/log/", "audit-log")):
        page.goto(url)
        expect(page.locator("h1")).not_to_contain_text("Run")
        assert english_on(page, allowed | {"alice", "otto"}) == "", url
        shoot(page, artifacts, name)


def test_the_language_menu_switches_and_is_remembered_at_the_next_login(cast, demo_provider, zh_page_for):
    page = zh_page_for("alice")
    expect(page.locator("button.primary.wide")).to_have_text("新对话")
    page.select_option("[data-role=language-menu]", "en")  # applies on change (language.js)
    expect(page.locator("button.primary.wide")).to_have_text("New conversation")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    assert UserPreference.objects.get(user=cast["alice"]).language == "en"
    page.locator("form[action='/logout/'] button").click()
    # A new browser that prefers Chinese: after logging in, alice's own choice wins.
    again = zh_page_for("alice")
    expect(again.locator("button.primary.wide")).to_have_text("New conversation")
    expect(again.locator("html")).to_have_attribute("lang", "en")
