"""The admin's own error texts in Chinese: field validators, the engine's configuration errors
(translated at the boundary, chatapp/services/engine_errors.py), the MCP Test connection report and
the provider test request, and the django-axes section (axes ships no Chinese catalogue)."""

from __future__ import annotations

import ast
import html
import re
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.utils import translation

from chatapp.models import McpServer, ProviderConfig

ROOT = Path(__file__).resolve().parents[2]
PROVIDER_ADD = "/admin/chatapp/providerconfig/add/"
MCP_ADD = "/admin/chatapp/mcpserver/add/"


def chinese_admin(people) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-CN")
    client.force_login(people["ada"])
    return client


def errors_of(response) -> str:
    """The form's error lists (field and non-field), as text."""
    body = html.unescape(response.content.decode())
    lists = re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', body, flags=re.S)
    notes = re.findall(r'<div class="errornote[^"]*">(.*?)</div>', body, flags=re.S)
    return " ".join(lists + notes)


def provider_form(**changes) -> dict:
    data = {
        "name": "local",
        "label": "",
        "kind": "openai_chat",
        "preset": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "m",
        "allowed_models": "",
        "api_key": "",
        "api_key_env": "",
        "context_window": "128000",
        "max_output_tokens": "",
        "extra_headers": "{}",
        "capability_overrides": "{}",
        "extra_body": "{}",
        "reasoning_effort": "",
        "thinking": "",
        "thinking_budget": "",
        "idle_timeout": "",
        "total_timeout": "",
        "max_retries": "2",
        "enabled": "on",
        "prices-TOTAL_FORMS": "0",
        "prices-INITIAL_FORMS": "0",
        "prices-MIN_NUM_FORMS": "0",
        "prices-MAX_NUM_FORMS": "1000",
    }
    return {**data, **changes}


def mcp_form(**changes) -> dict:
    data = {
        "name": "files",
        "transport": "stdio",
        "enabled": "on",
        "command": "python",
        "args": "[]",
        "env": "{}",
        "url": "",
        "headers": "{}",
        "connect_timeout": "15",
        "call_timeout": "60",
        "auth_mode": "none",
    }
    return {**data, **changes}


def _price_prefix(client: Client) -> str:
    page = client.get(PROVIDER_ADD).content.decode()
    return re.search(r'name="([\w-]+)-TOTAL_FORMS"', page).group(1)


def post_provider(client: Client, **changes):
    prefix = _price_prefix(client)
    data = {k.replace("prices-", f"{prefix}-"): v for k, v in provider_form(**changes).items()}
    response = client.post(PROVIDER_ADD, data)
    assert response.status_code == 200, "the form was expected to be refused"
    return response


# --- 1. field validators -------------------------------------------------------------------------
def test_the_validators_of_names_and_key_variables_speak_the_admins_language(people):
    client = chinese_admin(people)
    errors = errors_of(post_provider(client, name="Local Model!", api_key_env="HOME"))
    assert "请输入由小写字母、数字、_ 和 - 组成的名称（最多 40 个字符" in errors
    assert "'HOME' 不是允许的密钥变量：请使用 CLEARLOOP_KEY_<NAME> 或 <NAME>_API_KEY" in errors
    assert "lowercase letters" not in errors and "is not an allowed key variable" not in errors
    errors = errors_of(client.post(MCP_ADD, mcp_form(name="files__v2")))
    assert "请输入由小写字母、数字、_ 和 - 组成的名称（最多 32 个字符，不能含“__”）" in errors
    assert "lowercase letters" not in errors
    # A masked value that was never stored (the form's own check).
    errors = errors_of(client.post(MCP_ADD, mcp_form(env='{"API_TOKEN": "********"}')))
    assert "env：请填写 'API_TOKEN' 的值（它尚未保存）" in errors and "enter the value" not in errors


def test_the_same_validators_in_english_and_on_the_model(people):
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(people["ada"])
    errors = errors_of(post_provider(client, name="Local Model!", api_key_env="HOME"))
    assert "Enter a name of lowercase letters, digits, _ and - (at most 40" in errors
    assert "'HOME' is not an allowed key variable" in errors
    # full_clean (what every ModelForm runs) reads the message in the active language.
    with translation.override("zh-hans"):
        with pytest.raises(ValidationError) as raised:
            ProviderConfig(name="Bad!", base_url="http://x/v1", model="m", api_key_env="PATH").full_clean()
        text = " ".join(str(m) for m in raised.value.messages)
    assert "请输入由小写字母" in text and "'PATH' 不是允许的密钥变量" in text


# --- 2. the engine's configuration errors ----------------------------------------------------------
@pytest.mark.parametrize(
    ("changes", "chinese", "english"),
    [
        ({"preset": "nope"}, "未知的提供方预设 'nope'；应为以下之一：", "unknown provider preset"),
        (
            {"capability_overrides": '{"colour": 1}'},
            "未知的能力覆盖项 ['colour']；可用的有：['cjk_tokens_per_char'",
            "unknown capability override",
        ),
        (
            {"capability_overrides": '{"stream": "yes"}'},
            "stream 必须是 true 或 false，而不是 'yes'",
            "must be true or false",
        ),
        (
            {"extra_body": '{"model": "x"}'},
            "额外请求体不能设置 model：这些字段由 clearloop 自行发送",
            "may not set",
        ),
        ({"extra_body": "[1]"}, "额外请求体必须是 JSON 对象，而不是数组", "must be a JSON object"),
        (
            {"reasoning_effort": "huge"},
            "推理强度 'huge' 不在 'openai' 可用的取值之中：none, minimal, low, medium, high, xhigh",
            "is not one of",
        ),
        ({"thinking": "on"}, "预设 'openai' 不支持 thinking（它支持：reasoning_effort）", "does not support"),
    ],
)
def test_engine_errors_on_the_provider_form_are_chinese(people, changes, chinese, english):
    errors = errors_of(post_provider(chinese_admin(people), **changes))
    assert chinese in errors, errors
    assert english not in errors


def test_engine_errors_on_the_mcp_forms_are_chinese(people):
    client = chinese_admin(people)
    errors = errors_of(client.post(MCP_ADD, mcp_form(transport="http", command="")))
    assert "files：http 服务器需要 http(s) 网址" in errors and "needs an http(s) url" not in errors
    errors = errors_of(client.post(MCP_ADD, mcp_form(command="")))
    assert "files：stdio 服务器需要填写命令" in errors and "needs a command" not in errors
    response = client.post("/admin/chatapp/mcpserver/import/", {"document": '{"mcpServers": {"a": 1}}'})
    errors = errors_of(response)
    assert "未导入任何内容：a：条目必须是对象" in errors and "Nothing was imported" not in errors
    response = client.post("/admin/chatapp/mcpserver/import/", {"document": "{nope"})
    assert "未导入任何内容：不是有效的 JSON：" in errors_of(response)
    assert not McpServer.objects.exists()


def _engine_raises(path: Path, exception: str) -> list[tuple[str, set[str]]]:
    """(code, parameter names) of every ``raise <exception>(message, code, **params)`` in a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == exception:
            assert len(node.args) >= 2 and isinstance(node.args[1], ast.Constant), (
                f"{path}:{node.lineno}: {exception} without a code cannot be translated"
            )
            found.append((node.args[1].value, {k.arg for k in node.keywords if k.arg}))
    return found


def test_every_engine_error_code_has_a_translated_template_with_its_values():
    from chatapp.services import engine_errors

    sources = {
        "KnobError": (["agent/providers/knobs.py"], engine_errors.KNOB_TEMPLATES),
        "ProfileError": (["agent/providers/profiles.py"], engine_errors.PROFILE_TEMPLATES),
        "McpConfigError": (["agent/mcp/config.py", "agent/mcp/config_json.py"], engine_errors.MCP_TEMPLATES),
    }
    seen = 0
    for exception, (files, templates) in sources.items():
        for file in files:
            for code, params in _engine_raises(ROOT / file, exception):
                seen += 1
                assert code in templates, (exception, code)
                wanted = {n.removeprefix("q_") for n in re.findall(r"%\((\w+)\)s", str(templates[code]))}
                assert wanted <= params, (exception, code, wanted - params)
    assert seen >= 25


def test_an_engine_error_without_a_known_code_keeps_its_english_words():
    from agent.mcp import McpConfigError
    from chatapp.services.engine_errors import engine_message

    with translation.override("zh-hans"):
        assert engine_message(McpConfigError("something new")) == "something new"
        assert engine_message(ValueError("plain")) == "plain"
        assert (
            engine_message(McpConfigError("x: bad", "command", server="x")) == "x：stdio 服务器需要填写命令"
        )


# --- 3. Test connection and the provider's test request --------------------------------------------
def _code_stripped(page: str) -> str:
    return re.sub(r"<code[^>]*>.*?</code>", "", page, flags=re.S)


def test_the_mcp_test_connection_report_is_chinese(people, broken_server):
    no_url = McpServer.objects.create(name="remote", transport="http", url="")  # saved around the form
    client = chinese_admin(people)
    response = client.post(
        "/admin/chatapp/mcpserver/",
        {"action": "test_connection", "_selected_action": [broken_server.pk, no_url.pk]},
    )
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    broken = page[page.index('id="server-broken"') : page.index('id="server-remote"')]
    assert "无法启动或连接服务器，或服务器未完成握手。" in broken
    assert "ServerUnavailableError" in broken and "could not start" in broken  # the technical detail
    remote = page[page.index('id="server-remote"') :]
    assert "该服务器的设置无法使用。" in remote and "remote：http 服务器需要 http(s) 网址" in remote
    # Outside the technical detail (<code>), nothing English is left but the transports' names.
    from tests.web.test_translations import ALLOWED, english_words

    sections = "".join(re.findall(r'<section class="module cl-section".*?</section>', page, flags=re.S))
    words = english_words(_code_stripped(sections), ALLOWED | {"broken", "remote"})
    assert words == []


def test_the_sign_in_advice_of_test_connection_is_chinese(people):
    from chatapp.services.probes import probe_servers

    server = McpServer.objects.create(
        name="remote", transport="http", url="https://mcp.example/mcp", auth_mode="per_user"
    )
    with translation.override("zh-hans"):
        (report,) = probe_servers([server])  # no person: nothing to probe with
    assert report.sign_in_needed
    assert (
        report.summary.startswith("需要登录。此服务器需要每位用户各自登录") and "Sign" not in report.summary
    )


def test_the_provider_test_request_result_is_chinese(people, demo_model_url, dead_url):
    from tests.admin.test_providers import page_messages

    ok = ProviderConfig.objects.create(name="demo-test", base_url=demo_model_url, model="demo")
    down = ProviderConfig.objects.create(name="down", base_url=dead_url, model="m")
    client = chinese_admin(people)
    response = client.post(f"/admin/chatapp/providerconfig/{ok.pk}/test/", follow=True)
    text = page_messages(response)
    assert "demo-test：" in text or "demo-test:" in text
    assert "毫秒内作答" in text and "answered in" not in text and "finish_reason" in text
    response = client.post(f"/admin/chatapp/providerconfig/{down.pk}/test/", follow=True)
    assert "测试请求失败" in page_messages(response)


# --- 4. django-axes -----------------------------------------------------------------------------------
def _axes_msgids() -> set[str]:
    import axes

    found = set()
    for name in ("models.py", "admin.py"):
        tree = ast.parse((Path(axes.__file__).parent / name).read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "_"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                found.add(node.args[0].value)
    return found


def test_our_catalogue_lists_the_msgids_django_axes_uses():
    """If axes renames a text, our copy would translate nothing: the lists must match (Yes / No are
    Django's own, translated by Django's catalogue)."""
    from chatapp.axes_app import AXES_STRINGS

    assert _axes_msgids() - {"Yes", "No"} <= set(AXES_STRINGS) | {"Username"}
    assert set(AXES_STRINGS) <= _axes_msgids()


def test_the_axes_admin_section_is_chinese(people):
    from axes.models import AccessAttempt, AccessFailureLog, AccessLog

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
    AccessLog.objects.create(username="ada", ip_address="10.0.0.1", user_agent="curl", path_info="/login/")
    AccessFailureLog.objects.create(
        username="mallory", ip_address="10.0.0.9", user_agent="curl", path_info="/login/"
    )
    client = chinese_admin(people)
    index = client.get("/admin/").content.decode()
    assert "登录限制" in index and "登录尝试" in index and "登录日志" in index
    assert ">Axes<" not in index and "Access attempts" not in index
    page = html.unescape(client.get(f"/admin/axes/accessattempt/{attempt.pk}/change/").content.decode())
    assert "失败登录次数" in page and "元数据" in page and "用户代理" in page
    listing = client.get("/admin/axes/accessattempt/").content.decode()
    assert "尝试时间" in listing and "次尝试机会剩余" in listing and "Attempt Remaining" not in listing


def test_in_english_the_translated_engine_errors_are_the_engines_own_words():
    """The templates repeat the engine's messages: an English admin reads exactly what the engine
    (and its tests, logs and the mcp_import command) says."""
    from agent.mcp import McpServerConfig, parse_mcp_servers
    from agent.providers import knobs, profiles
    from chatapp.services.engine_errors import engine_message

    caps = profiles.resolve("openai", "m")
    anthropic = profiles.resolve("anthropic", "claude-x")
    attempts = [
        lambda: knobs.validate_extra_body({"model": 1}),
        lambda: knobs.validate_extra_body({"model": 1, "tools": 2}),
        lambda: knobs.validate_extra_body("x"),
        lambda: knobs.validate_knobs(knobs.Knobs(thinking=True), caps, "openai"),
        lambda: knobs.validate_knobs(knobs.Knobs(reasoning_effort="huge"), caps, "openai"),
        lambda: knobs.validate_knobs(knobs.Knobs(thinking=False, thinking_budget=5), anthropic, "anthropic"),
        lambda: knobs.validate_knobs(knobs.Knobs(thinking_budget=5), anthropic, "anthropic"),
        lambda: profiles.resolve("nope", "m"),
        lambda: profiles.resolve("openai", "m", {"colour": 1}),
        lambda: profiles.resolve("openai", "m", {"stream": "yes"}),
        lambda: McpServerConfig(name="Bad Name"),
        lambda: McpServerConfig(name="a", transport="sse"),
        lambda: McpServerConfig(name="a", command="x", connect_timeout=0),
        lambda: parse_mcp_servers("{"),
        lambda: parse_mcp_servers("[]"),
        lambda: parse_mcp_servers("{}"),
        lambda: parse_mcp_servers('{"mcpServers": {"A": {"command": "x"}, "a": {"command": "y"}}}'),
        lambda: parse_mcp_servers('{"mcpServers": {"a": {"command": "x", "env": [1]}}}'),
        lambda: parse_mcp_servers('{"mcpServers": {"a": {"command": 1}}}'),
        lambda: parse_mcp_servers('{"mcpServers": {"a": {}}}'),
        lambda: parse_mcp_servers('{"mcpServers": {"a": {"url": "https://x/", "type": "ws"}}}'),
        lambda: parse_mcp_servers('{"mcpServers": {"!!": {"command": "x"}}}'),
    ]
    for attempt in attempts:
        with pytest.raises(ValueError) as raised:
            attempt()
        assert raised.value.code, raised.value  # a code, so it can be translated
        with translation.override("en"):
            assert engine_message(raised.value) == str(raised.value)
        with translation.override("zh-hans"):
            assert re.search(r"[\u4e00-\u9fff]", engine_message(raised.value)), str(raised.value)


def test_the_export_messages_are_chinese(people):
    McpServer.objects.create(
        name="remote",
        transport="http",
        url="https://mcp.example/mcp",
        headers={"Authorization": "Bearer abc"},
    )
    McpServer.objects.create(name="empty", transport="stdio", command="")  # saved around the form
    client = chinese_admin(people)
    response = client.post(
        "/admin/chatapp/mcpserver/",
        {"action": "export_json", "_selected_action": list(McpServer.objects.values_list("pk", flat=True))},
    )
    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
    texts = [str(m) for m in response.wsgi_request._messages]
    assert "已导出为占位符：remote: header Authorization -> env:REMOTE_AUTHORIZATION" in texts, texts
    assert "未导出：empty：stdio 服务器需要填写命令" in texts, texts
    assert not any("exported" in t.lower() or "needs a command" in t for t in texts)
