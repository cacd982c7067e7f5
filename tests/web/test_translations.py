"""The Chinese UI: the catalogue check (every string the code marks for translation has a real,
non-fuzzy Simplified Chinese translation, and the committed .mo files are compiled from the .po
files), the chat page rendered in zh-Hans with no English left, and how the language is chosen."""

from __future__ import annotations

import ast
import re
from html.parser import HTMLParser
from pathlib import Path

import polib
import pytest
from django.test import Client
from django.utils.translation.template import templatize

from chatapp.models import Approval, Conversation, Message, Round, Run, ToolCall, UserPreference

ROOT = Path(__file__).resolve().parents[2]
LOCALE = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES"
PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def _catalogue(domain: str) -> polib.POFile:
    return polib.pofile(str(LOCALE / f"{domain}.po"))


def _keys(po: polib.POFile) -> set[tuple[str | None, str]]:
    return {(e.msgctxt, e.msgid) for e in po if not e.obsolete}


# --- what the code marks for translation (what makemessages extracts, without needing xgettext) ---
_LITERAL = r"""u?('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""
_TEMPLATE_CALL = re.compile(rf"\b(gettext|ngettext|pgettext|npgettext)\(\s*{_LITERAL}(?:\s*,\s*{_LITERAL})?")
_JS_CALL = re.compile(r"""\b(gettext|ngettext)\(\s*"((?:[^"\\]|\\.)*)"\s*[,)]""")
_PY_FUNCS = {
    "_",
    "gettext",
    "gettext_lazy",
    "gettext_noop",
    "ngettext",
    "ngettext_lazy",
    "pgettext",
    "pgettext_lazy",
}


def _from_templates() -> set[tuple[str | None, str]]:
    found = set()
    for path in (ROOT / "templates").rglob("*.html"):
        for name, first, second in _TEMPLATE_CALL.findall(templatize(path.read_text(), origin=str(path))):
            if name.startswith(("p", "np")):
                found.add((ast.literal_eval(first), ast.literal_eval(second)))
            else:
                found.add((None, ast.literal_eval(first)))
    return found


def _from_python() -> set[tuple[str | None, str]]:
    found = set()
    for path in (ROOT / "chatapp").rglob("*.py"):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _PY_FUNCS
            ):
                continue
            args = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if node.func.id.startswith("pgettext") and len(args) >= 2:
                found.add((args[0], args[1]))
            elif args:
                found.add((None, args[0]))
    return found


def _from_javascript() -> set[tuple[str | None, str]]:
    found = set()
    for path in (ROOT / "static" / "js").glob("*.js"):
        for _name, text in _JS_CALL.findall(path.read_text()):
            found.add((None, ast.literal_eval(f'"{text}"')))
    return found


def test_every_string_the_code_marks_is_in_the_chinese_catalogue():
    """Fails when a new string is wrapped but `make messages` was not run (or its translation not
    written): the .po files are the translators' to-do list and must hold everything."""
    missing = (_from_templates() | _from_python()) - _keys(_catalogue("django"))
    assert sorted(missing, key=str) == []
    missing_js = _from_javascript() - _keys(_catalogue("djangojs"))
    assert sorted(missing_js, key=str) == []


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_every_entry_has_a_real_translation_that_keeps_its_placeholders(domain):
    po = _catalogue(domain)
    assert len(po) > 20
    problems = []
    for e in po:
        if e.obsolete:
            continue
        translations = list(e.msgstr_plural.values()) if e.msgid_plural else [e.msgstr]
        if "fuzzy" in e.flags or not all(t.strip() for t in translations):
            problems.append(("untranslated or fuzzy", e.msgid))
            continue
        wanted = set(PLACEHOLDER.findall(e.msgid))
        for t in translations:
            if set(PLACEHOLDER.findall(t)) != wanted:
                problems.append(("placeholders differ", e.msgid, t))
            # A translation that is still the English text (apart from names) was never done.
            if t == e.msgid and re.search(r"[A-Za-z]{3}", PLACEHOLDER.sub("", t)):
                problems.append(("same as English", e.msgid))
    assert problems == []


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_the_committed_mo_files_are_compiled_from_the_po_files(domain):
    """`make run` uses the committed .mo files (no gettext needed): they must say what the .po says."""
    po, mo = _catalogue(domain), polib.mofile(str(LOCALE / f"{domain}.mo"))

    def table(catalogue):
        return {
            (e.msgctxt, e.msgid): (tuple(sorted(e.msgstr_plural.items())) if e.msgid_plural else e.msgstr)
            for e in catalogue
            if not e.obsolete and "fuzzy" not in e.flags
        }

    assert table(mo) == table(po), f"run `make messages` to recompile locale/zh_Hans/LC_MESSAGES/{domain}.mo"
    assert mo.metadata.get("Plural-Forms", "").startswith("nplurals=1")


# --- the chat page in Chinese ------------------------------------------------------------------
# Words that stay as they are in the Chinese UI: the product, technical names and units.
ALLOWED = {
    "clearloop",
    "demo",
    "api",
    "mcp",
    "token",
    "http",
    "zip",
    "enter",
    "shift",
    "alt",  # key caps are labelled in Latin letters on Chinese keyboards too
    "esc",
    "json",
    "markdown",
    "english",
    "ms",
    "django",
    "sql",
    "stdio",
    "clearloop-demo",
}


class _VisibleText(HTMLParser):
    """Text a person reads: text nodes and the attributes screen readers and tooltips show; not code,
    scripts, styles, or the user's and the model's own content (marked by the test data below)."""

    SKIP = {"script", "style", "code", "pre", "template"}

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.chunks: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.depth += 1
        for name, value in attrs:
            if name in {"placeholder", "aria-label", "title", "hx-confirm"} and value:
                self.chunks.append(value)

    def handle_endtag(self, tag):
        if tag in self.SKIP and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if not self.depth and data.strip():
            self.chunks.append(data)


def english_words(html: str, allowed: frozenset[str] | set[str] = ALLOWED) -> list[str]:
    """Words of Latin letters; names with dots, slashes, digits or underscores (config.yaml,
    read_file, gpt-4o) are identifiers, not sentences, and stay as they are."""
    parser = _VisibleText()
    # A break opportunity (<wbr>, e.g. after a tool name's underscores in the admin) is not a space.
    parser.feed(html.replace("<wbr>", ""))
    return english_in(parser.chunks, allowed)


def english_in(chunks: list[str], allowed: frozenset[str] | set[str] = ALLOWED) -> list[str]:
    """The English words among texts a person reads (see english_words)."""
    tokens = re.split(r"[\s\u3000-\u303f\u3400-\u9fff\uff00-\uffef“”‘’·■–—…()（）:,;!?]+", " ".join(chunks))
    words = [t for t in tokens if re.fullmatch(r"[A-Za-z][A-Za-z'-]*[A-Za-z]\.?", t)]
    return [w.rstrip(".") for w in words if w.rstrip(".").lower() not in allowed]


@pytest.fixture
def chinese_conversation(cast):
    convo = Conversation.objects.create(owner=cast["alice"], title="销售报表")
    question = Message.objects.create(
        conversation=convo, role="user", content="上个月的销售额是多少？", payload={}
    )
    run = Run.objects.create(
        conversation=convo,
        user_message=question,
        provider_name="demo",
        model="m",
        status="succeeded",
        prompt_tokens=1200,
        completion_tokens=80,
        rounds_count=2,
        tool_calls_count=1,
    )
    question.run = run
    question.save()
    Message.objects.create(
        conversation=convo, run=run, role="assistant", content="上个月的销售额是 42 万元。"
    )
    for index in (0, 1):
        Round.objects.create(
            run=run,
            index=index,
            provider_name="demo",
            model="m",
            finish_reason="stop",
            usage={"prompt_tokens": 600, "completion_tokens": 40},
            cost="0.01",
        )
    ToolCall.objects.create(
        run=run,
        round_index=0,
        index=0,
        call_id="c1",
        name="read_file",
        arguments='{"path": "sales.csv"}',
        result='{"rows": 3}',
        status="succeeded",
    )
    return convo


def test_the_chat_page_in_chinese_has_no_english_left(cast, chinese_conversation, settings):
    # Also as they are: the currency code, the model's finish reasons, the accepted file types.
    allowed = ALLOWED | {settings.COST_CURRENCY.lower(), "stop", "length", *settings.UPLOAD_ALLOWED_TYPES}
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9")
    client.force_login(cast["alice"])
    for url in ("/", f"/c/{chinese_conversation.pk}/"):
        response = client.get(url)
        assert response.status_code == 200
        html = response.content.decode()
        assert '<html lang="zh-hans"' in html
        assert " ".join(w for w in english_words(html, allowed) if w != "alice") == "", url


def test_the_same_page_in_english_is_english(cast, chinese_conversation):
    client = Client(HTTP_ACCEPT_LANGUAGE="en-GB,en;q=0.9")
    client.force_login(cast["alice"])
    html = client.get(f"/c/{chinese_conversation.pk}/").content.decode()
    assert '<html lang="en"' in html and "New conversation" in html and "新对话" not in html


# --- choosing the language ---------------------------------------------------------------------
def _log_in(client: Client, name: str) -> None:
    response = client.post("/login/", {"username": name, "password": f"{name}-pass"})
    assert response.status_code == 302, response.content[:500]


def test_the_browser_language_is_the_default(cast):
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-CN")
    client.force_login(cast["bob"])
    assert "新对话" in client.get("/").content.decode()
    client = Client(HTTP_ACCEPT_LANGUAGE="fr-FR,en;q=0.5")
    client.force_login(cast["bob"])
    assert "New conversation" in client.get("/").content.decode()


def test_the_switch_is_remembered_for_the_person_across_logout_and_login(cast):
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    _log_in(client, "alice")
    response = client.post("/language/", {"language": "zh-hans", "next": "/"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert UserPreference.objects.get(user=cast["alice"]).language == "zh-hans"
    assert "新对话" in client.get("/").content.decode()
    client.post("/logout/")
    # Another browser (no language cookie) that asks for English still gets alice's choice.
    other = Client(HTTP_ACCEPT_LANGUAGE="en")
    _log_in(other, "alice")
    html = other.get("/").content.decode()
    assert "新对话" in html and '<html lang="zh-hans"' in html
    # Bob, in the same kind of browser, is not affected.
    bob = Client(HTTP_ACCEPT_LANGUAGE="en")
    _log_in(bob, "bob")
    assert "New conversation" in bob.get("/").content.decode()


def test_switching_back_to_english_is_remembered_too(cast):
    UserPreference.objects.create(user=cast["alice"], language="zh-hans")
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-CN")
    _log_in(client, "alice")
    client.post("/language/", {"language": "en", "next": "/"})
    fresh = Client(HTTP_ACCEPT_LANGUAGE="zh-CN")
    _log_in(fresh, "alice")
    assert "New conversation" in fresh.get("/").content.decode()


def test_an_unknown_language_is_refused_and_changes_nothing(cast):
    client = Client()
    client.force_login(cast["alice"])
    response = client.post("/language/", {"language": "xx", "next": "/"})
    assert response.status_code == 400
    assert not UserPreference.objects.filter(user=cast["alice"]).exists()


def test_the_javascript_catalogue_serves_the_chinese_strings(cast):
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-CN")
    client.force_login(cast["alice"])
    body = client.get("/jsi18n/").content.decode()
    assert "\\u91cd\\u65b0\\u8fde\\u63a5\\u4e2d" in body or "重新连接中" in body  # Reconnecting…


def test_the_audit_pages_in_chinese_have_no_english_left(cast, chinese_conversation, settings):
    allowed = ALLOWED | {
        settings.COST_CURRENCY.lower(),
        "stop",
        "length",
        "jsonl",
        "opentelemetry",
        "id",
    }
    run = chinese_conversation.runs.get()
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-CN")
    client.force_login(cast["otto"])
    for url in ("/audit/", f"/audit/runs/{run.pk}/", "/audit/log/"):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        names = {"alice", "otto"}
        assert " ".join(w for w in english_words(html, allowed) if w not in names) == "", url


def test_the_approval_review_in_the_admin_is_chinese(cast, chinese_conversation):
    """The admin additions around a call waiting for approval (the review and decision sections; the
    model's own field list below them is Django's admin form)."""
    run = chinese_conversation.runs.get()
    call = ToolCall.objects.create(
        run=run,
        round_index=1,
        index=0,
        call_id="c2",
        name="send_message",
        arguments='{"phone_number": "13800000000"}',
        status="awaiting_approval",
        risk="high",
    )
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-CN")
    client.force_login(cast["ada"])
    html = client.get(f"/admin/chatapp/toolcall/{call.pk}/change/").content.decode()
    review = html[html.index('class="cl-review"') : html.index('id="details"')]
    assert "批准并执行" in review and "等待审批" in review
    assert " ".join(w for w in english_words(review, ALLOWED | {"stop"}) if w not in {"alice"}) == ""
    queue = client.get("/admin/chatapp/toolcall/?queue=all").content.decode()
    assert f"运行 {run.pk}（已完成）" in queue and "等待时长" in queue


def test_failures_approval_cards_and_budgets_are_chinese_too(cast, chinese_conversation, settings):
    """The states a person meets when something goes wrong or waits: a provider failure explained in
    words, a call waiting for an admin (its card and Stop), a budget line under the message box."""
    from chatapp.models import ProviderConfig, Quota

    ProviderConfig.objects.create(name="down", base_url="http://127.0.0.1:9/v1", model="m")
    convo = chinese_conversation
    # One branch: the first exchange, then a failed run, then one waiting for an approval.
    first = convo.runs.get()
    failed = Message.objects.create(
        conversation=convo, role="user", content="再试一次", payload={}, parent_run=first
    )
    down = Run.objects.create(
        conversation=convo,
        user_message=failed,
        provider_name="down",
        model="m",
        status="failed",
        error_class="RateLimited",
        error="429 Too Many Requests",
    )
    asked = Message.objects.create(
        conversation=convo, role="user", content="给 13800000000 发短信", payload={}, parent_run=down
    )
    waiting = Run.objects.create(
        conversation=convo, user_message=asked, provider_name="demo", model="m", status="awaiting_approval"
    )
    ToolCall.objects.create(
        run=waiting,
        round_index=0,
        index=0,
        call_id="w1",
        name="send_message",
        arguments='{"phone_number": "13800000000"}',
        status="awaiting_approval",
        risk="high",
    )
    for message, run in ((failed, down), (asked, waiting)):
        message.run = run
        message.save()
    convo.active_run = waiting
    convo.save()
    Quota.objects.create(user=cast["alice"], tokens_per_day=100_000)
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-CN")
    client.force_login(cast["alice"])
    html = client.get(f"/c/{convo.pk}/").content.decode()
    assert "正在限制请求（速率限制）" in html  # the failure in words
    assert "正在等待管理员审批" in html and "今日 Token 预算已用" in html
    allowed = ALLOWED | {settings.COST_CURRENCY.lower(), "stop", "length", *settings.UPLOAD_ALLOWED_TYPES}
    names = {"alice", "down"}  # the user, the provider
    assert " ".join(w for w in english_words(html, allowed) if w not in names) == ""


# --- the admin's model labels and stored English texts ------------------------------------------
# Django's admin chrome adds its own words: its column sorters, the "Show counts" filter link and the
# field types of a read-only page are Django's; what is checked here is what our models name.
ADMIN_PAGES = (
    "/admin/chatapp/",  # the app's index (the site index also lists django-axes, not ours)
    "/admin/chatapp/run/",
    "/admin/chatapp/run/{run}/change/",
    "/admin/chatapp/toolcall/?queue=all",
    "/admin/chatapp/toolpolicy/",
    "/admin/chatapp/toolpolicy/add/",
    "/admin/chatapp/toolpolicy/{policy}/change/",
    "/admin/chatapp/quota/",
    "/admin/chatapp/quota/add/",
    "/admin/chatapp/quota/{quota}/change/",
    "/admin/chatapp/mcpserver/{server}/change/",
    "/admin/chatapp/providerconfig/{provider}/change/",
    "/admin/chatapp/conversation/",
    "/admin/chatapp/conversation/{conversation}/change/",
    "/admin/chatapp/mcpserver/import/",
    "/admin/chatapp/quota/usage/",
    "/admin/chatapp/message/",
    "/admin/chatapp/approval/",
    "/admin/chatapp/mcpserver/",
    "/admin/chatapp/apikey/",
    "/admin/chatapp/providerconfig/",
    "/admin/chatapp/round/",
    "/admin/chatapp/runevent/",
)


def test_the_admin_names_our_models_and_fields_in_chinese(cast, chinese_conversation, settings):
    from chatapp.models import McpServer, ProviderConfig, Quota, ToolPolicy

    run = chinese_conversation.runs.get()
    policy = ToolPolicy.objects.create(pattern="github__*", tier="low", approval="when_high")
    quota = Quota.objects.create(user=cast["alice"], tokens_per_day=1000)
    server = McpServer.objects.create(
        name="files", transport="http", url="https://mcp.example/", auth_mode="per_user"
    )
    provider = ProviderConfig.objects.create(name="local", base_url="http://127.0.0.1:9/v1", model="m")
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-CN")
    client.force_login(cast["ada"])
    # Protocol and format names stay: Streamable HTTP, SSE, OAuth, the mcpServers JSON.
    allowed = ALLOWED | {settings.COST_CURRENCY.lower(), "stop", "id", "github", "oauth", "sse", "streamable"}
    # Also: a scheme, the provider APIs' vendors, and technical words Chinese admins write in Latin.
    allowed |= {"mcpservers", "https", "openai", "anthropic", "shell", "slug", "csv"}
    for template in ADMIN_PAGES:
        url = template.format(
            conversation=chinese_conversation.pk,
            run=run.pk,
            policy=policy.pk,
            quota=quota.pk,
            server=server.pk,
            provider=provider.pk,
        )
        response = client.get(url)
        assert response.status_code == 200, url
        # The sidebar lists every app, django-axes' too (its own catalogue has no Chinese).
        html = re.sub(
            r'<nav class="sticky" id="nav-sidebar".*?</nav>', "", response.content.decode(), flags=re.S
        )
        # Names stay: the provider APIs' names and the built-in provider's stored label.
        apps = ("Claude Desktop", "Cursor", "VS Code")  # the mcpServers import's sources
        for name in (
            "OpenAI Chat Completions",
            "OpenAI Responses",
            "Anthropic Messages",
            "Demo model",
            *apps,
        ):
            html = html.replace(name, "")
        # The presets' names and the request fields the extra body may not set (protocol names).
        html = re.sub(r"(能力配置：|不能设置 )[a-z_, ]+", "", html)
        names = {"alice", "ada", "bob", "otto", "auditors", "demo", "local", "files", "m"}  # people, names
        assert " ".join(w for w in english_words(html, allowed) if w not in names) == "", url
    page = client.get(f"/admin/chatapp/run/{run.pk}/change/").content.decode()
    assert "投递次数" in page and "运行" in page and "已完成" in page  # deliveries, run, succeeded
    listing = client.get("/admin/chatapp/toolpolicy/").content.decode()
    assert "风险等级" in listing and "高风险时" in listing  # tier, when high risk
    refused = client.post("/admin/chatapp/quota/add/", {"user": cast["bob"].pk, "enabled": "on"})
    assert refused.status_code == 200 and "请至少设置一项限制" in refused.content.decode()  # no limit set


def _stopped_run(convo: Conversation, text: str, *, status: str, error_class: str = "") -> Run:
    asked = Message.objects.create(
        conversation=convo, role="user", content=text, payload={}, parent_run=convo.runs.last()
    )
    run = Run.objects.create(
        conversation=convo,
        user_message=asked,
        provider_name="demo",
        model="m",
        status=status,
        error_class=error_class,
    )
    asked.run = run
    asked.save()
    return run


def test_stored_english_errors_and_reasons_are_shown_in_the_readers_language(cast, chinese_conversation):
    """What the worker and the buttons stored in English (chatapp/stored_texts.py): a run stopped by
    its user, an approval given with Allow once, a budget that ran out between rounds. The rows keep
    the English (the audit chain pins them); the pages show it in the reader's language."""
    convo = chinese_conversation
    stopped = _stopped_run(convo, "再问一次", status="cancelled")
    Run.objects.filter(pk=stopped.pk).update(error="Stopped by the user.")
    Round.objects.create(run=stopped, index=0, provider_name="demo", model="m", finish_reason="tool_calls")
    call = ToolCall.objects.create(
        run=stopped, round_index=0, index=0, call_id="s1", name="read_file", status="approved"
    )
    Approval.objects.create(
        tool_call=call, decision="approved", decided_by=cast["alice"], reason="Allowed once in the chat"
    )
    budget = _stopped_run(convo, "继续", status="failed", error_class="BudgetExceeded")
    stored_budget = (
        "The daily token budget is used up: 1,234 tokens today, the limit is 1,000 tokens "
        "(your quota). It resets at midnight (UTC)."
    )
    Run.objects.filter(pk=budget.pk).update(error=stored_budget)
    convo.active_run = budget
    convo.save()
    pages = {
        "chat": (cast["alice"], f"/c/{convo.pk}/"),
        "audit": (cast["otto"], f"/audit/runs/{stopped.pk}/"),
    }
    html: dict[tuple[str, str], str] = {}
    for language in ("zh-CN", "en"):
        for page, (who, url) in pages.items():
            client = Client(HTTP_ACCEPT_LANGUAGE=language)
            client.force_login(who)
            html[language, page] = client.get(url).content.decode()
    chat, audit = html["zh-CN", "chat"], html["zh-CN", "audit"]
    # The technical line ("Failed with <code>BudgetExceeded: …</code>") quotes the row as stored.
    chat = re.sub(r"<code>.*?</code>", "", chat, flags=re.S)
    assert "已在对话中允许一次" in chat and "每日 Token 预算已用完：今天已用 1,234 Token" in chat
    assert "已由用户停止。" in audit and "已在对话中允许一次" in audit
    for english in ("Stopped by the user.", "Allowed once in the chat", "The daily token budget"):
        assert english not in chat + audit, english
    chat, audit = html["en", "chat"], html["en", "audit"]
    assert "Allowed once in the chat" in chat and "The daily token budget is used up: 1,234 tokens" in chat
    assert "Stopped by the user." in audit and "Allowed once in the chat" in audit
    # The rows themselves are untouched.
    assert Run.objects.get(pk=stopped.pk).error == "Stopped by the user."
    assert Run.objects.get(pk=budget.pk).error == stored_budget


def test_the_technical_failure_line_keeps_the_class_and_says_clearloops_words_in_chinese(
    cast, chinese_conversation
):
    """The trace's "Failed with <code>" line: the error class is a name and stays; what clearloop
    itself stored in English (a budget stop) is shown in the reader's language, like the sentence
    above it. What an upstream sent stays as it sent it (see test_failures_approval_cards...)."""
    budget = _stopped_run(chinese_conversation, "继续", status="failed", error_class="BudgetExceeded")
    Run.objects.filter(pk=budget.pk).update(
        error="The daily token budget is used up: 1,234 tokens today, the limit is 1,000 tokens "
        "(your quota). It resets at midnight (UTC)."
    )
    lines = {}
    for language in ("zh-CN", "en"):
        client = Client(HTTP_ACCEPT_LANGUAGE=language)
        client.force_login(cast["alice"])
        page = client.get(f"/c/{chinese_conversation.pk}/").content.decode()
        lines[language] = re.search(
            r'<p class="error-detail" data-role="error-detail">(.*?)</p>', page, re.S
        )[1]
    chinese, english = lines["zh-CN"], lines["en"]
    assert chinese.startswith("失败原因 <code>BudgetExceeded: 每日 Token 预算已用完：今天已用 1,234 Token")
    assert "The daily token budget" not in chinese and "your quota" not in chinese
    assert english.startswith("Failed with <code>BudgetExceeded: The daily token budget is used up")


def test_the_admin_error_states_test_results_and_axes_pages_have_no_english_left(cast, settings):
    """The admin pages a Chinese admin meets when something is refused or tested: the provider and
    MCP server forms with an engine error and a validator error shown, the MCP Test connection
    report, and django-axes' section (its own catalogue has no Chinese). Technical details inside
    <code> (an exception class, what a server printed) stay as they are."""
    from axes.models import AccessAttempt, AccessFailureLog, AccessLog

    from chatapp.models import McpServer, ProviderConfig
    from tests.admin.test_admin_chinese import mcp_form, post_provider

    provider = ProviderConfig.objects.create(name="local", base_url="http://127.0.0.1:9/v1", model="m")
    broken = McpServer.objects.create(name="broken", command="/nonexistent/mcp-server", connect_timeout=5)
    McpServer.objects.create(name="remote", transport="http", url="")
    attempt = AccessAttempt.objects.create(
        username="mallory",
        ip_address="10.0.0.9",
        user_agent="curl",
        http_accept="*/*",
        path_info="/login/",
        get_data="",
        post_data="",
        failures_since_start=2,
    )
    log = AccessLog.objects.create(username="ada", ip_address="10.0.0.1", user_agent="curl", path_info="/")
    failure = AccessFailureLog.objects.create(username="mallory", ip_address="10.0.0.9", user_agent="curl")
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-CN")
    client.force_login(cast["ada"])
    pages = {
        "provider form, refused": post_provider(
            client, name="Local!", api_key_env="HOME", preset="nope", extra_body='{"model": "x"}'
        ),
        "provider form, refused knobs": post_provider(client, reasoning_effort="huge", thinking="on"),
        "mcp form, refused": client.post(
            f"/admin/chatapp/mcpserver/{broken.pk}/change/",
            mcp_form(name="broken", transport="sse", command="", env='{"TOKEN": "********"}'),
        ),
        "mcp import, refused": client.post("/admin/chatapp/mcpserver/import/", {"document": "[]"}),
        "test connection": client.post(
            "/admin/chatapp/mcpserver/",
            {
                "action": "test_connection",
                "_selected_action": list(McpServer.objects.values_list("pk", flat=True)),
            },
        ),
    }
    for url in (
        "/admin/",
        "/admin/axes/",
        "/admin/axes/accessattempt/",
        f"/admin/axes/accessattempt/{attempt.pk}/change/",
        "/admin/axes/accesslog/",
        f"/admin/axes/accesslog/{log.pk}/change/",
        "/admin/axes/accessfailurelog/",
        f"/admin/axes/accessfailurelog/{failure.pk}/change/",
        f"/admin/chatapp/providerconfig/{provider.pk}/change/",
    ):
        pages[url] = client.get(url)
    # Identifiers and protocol words (as in test_the_admin_names_our_models_and_fields_in_chinese),
    # the values of the refused settings, and the names in the rows.
    allowed = ALLOWED | {settings.COST_CURRENCY.lower(), "id", "github", "oauth", "sse", "streamable"}
    allowed |= {"mcpservers", "https", "openai", "anthropic", "shell", "slug", "csv", "ip", "get", "post"}
    allowed |= {"sha-256", "user-agent", "accept", "url", "curl", "stdio", "nope", "huge", "none", "minimal"}
    allowed |= {"low", "medium", "high", "xhigh", "reasoning_effort", "thinking", "model", "clearloop_key_"}
    names = {
        "ada",
        "mallory",
        "local",
        "broken",
        "remote",
        "alice",
        "bob",
        "otto",
        "auditors",
        "m",
        "env",
        "home",
    }
    for what, response in pages.items():
        assert response.status_code == (400 if what == "mcp import, refused" else 200), what
        page = response.content.decode()
        page = re.sub(r"<code[^>]*>.*?</code>", "", page, flags=re.S)
        for name in ("OpenAI Chat Completions", "OpenAI Responses", "Anthropic Messages", "Demo model"):
            page = page.replace(name, "")
        for name in ("Claude Desktop", "Cursor", "VS Code"):
            page = page.replace(name, "")
        page = re.sub(r"(能力配置：|不能设置 |以下之一：)[\['a-z_, \]-]+", "", page)
        # axes' objects name themselves in English (their __str__ is not marked for translation).
        page = re.sub(r"(Attempted Access|Access Log for|Failed access)[^<\"]*", "", page)
        page = re.sub(r"CLEARLOOP_\w+|\w+_API_KEY|<NAME>", "", page)
        words = [w for w in english_words(page, allowed) if w.lower() not in names]
        assert " ".join(words) == "", what
    assert "登录限制" in pages["/admin/"].content.decode()
