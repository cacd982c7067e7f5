"""MCP servers in the admin: test connection against the real demo server, import and export."""

from __future__ import annotations

import html
import json
import sys

import psutil
import pytest

from chatapp.models import McpServer

CHANGELIST = "/admin/chatapp/mcpserver/"

DOCUMENT = {
    "mcpServers": {
        "Env Query": {"command": sys.executable, "args": ["-m", "demo.servers.env_query"]},
        "remote": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"X-Team": "blue"}},
    }
}


def text(response) -> str:
    return html.unescape(response.content.decode())


def children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def test_test_connection_lists_the_demo_tools_and_shows_a_broken_server(
    login, env_query_server, broken_server
):
    before = children()
    response = login("ada").post(
        CHANGELIST,
        {"action": "test_connection", "_selected_action": [env_query_server.pk, broken_server.pk]},
    )
    assert response.status_code == 200
    body = text(response)
    assert "env_query__get_environment_status" in body
    assert "connected" in body
    assert "area_code" in body  # the input schema, pretty-printed
    assert "Use this when the user asks about the weather" in body  # the description
    assert "2025-" in body or "2026-" in body  # a protocol version
    broken = body[body.index('id="server-broken"') :]
    assert "error" in broken and "could not start" in broken
    assert children() <= before, "the pool must be closed: no stdio child left behind"


def test_the_change_page_button_tests_one_server(login, env_query_server):
    client = login("ada")
    page = client.get(f"{CHANGELIST}{env_query_server.pk}/change/").content.decode()
    assert f'action="{CHANGELIST}{env_query_server.pk}/test-connection/"' in page
    assert "env:NAME" in html.unescape(page)  # the help text on env / headers
    response = client.post(f"{CHANGELIST}{env_query_server.pk}/test-connection/")
    assert response.status_code == 200
    assert "env_query__get_environment_status" in text(response)
    assert client.get(f"{CHANGELIST}{env_query_server.pk}/test-connection/").status_code == 405


@pytest.mark.live  # spawns the server it writes
def test_tool_text_from_a_server_is_escaped(login, db, tmp_path):
    server_py = tmp_path / "xss_server.py"
    server_py.write_text(
        "from mcp.server import MCPServer\n"
        "server = MCPServer('xss', instructions='<script>alert(\"instr\")</script>')\n"
        "@server.tool()\n"
        "def probe(q: str) -> str:\n"
        "    '''<script>alert(\"desc\")</script> <img src=x onerror=alert(1)>'''\n"
        "    return q\n"
        "server.run()\n"
    )
    server = McpServer.objects.create(name="xss", command=sys.executable, args=[str(server_py)])
    response = login("ada").post(f"{CHANGELIST}{server.pk}/test-connection/")
    body = response.content.decode()
    assert "xss__probe" in body
    assert '<script>alert("desc")' not in body and "<img src=x" not in body
    assert "&lt;script&gt;alert(&quot;desc&quot;)" in body
    assert '<script>alert("instr")' not in body


def test_import_view_creates_and_updates_servers(login):
    client = login("ada")
    assert client.get(f"{CHANGELIST}import/").status_code == 200
    assert f'href="{CHANGELIST}import/"' in client.get(CHANGELIST).content.decode()
    response = client.post(f"{CHANGELIST}import/", {"document": json.dumps(DOCUMENT)}, follow=True)
    assert response.redirect_chain[-1][0] == CHANGELIST
    assert "created env-query (stdio)" in text(response).lower()
    env_query = McpServer.objects.get(name="env-query")
    assert env_query.args == ["-m", "demo.servers.env_query"]
    remote = McpServer.objects.get(name="remote")
    assert (remote.transport, remote.url, remote.headers) == (
        "http",
        "https://mcp.example.com/mcp",
        {"X-Team": "blue"},
    )

    DOCUMENT_2 = {"mcpServers": {"remote": {"url": "https://mcp.example.com/v2/mcp"}}}
    upload = _upload(json.dumps(DOCUMENT_2))
    response = client.post(f"{CHANGELIST}import/", {"file": upload}, follow=True)
    assert "updated remote (http)" in text(response).lower()
    assert McpServer.objects.get(name="remote").url == "https://mcp.example.com/v2/mcp"
    assert McpServer.objects.count() == 2


def test_import_view_shows_errors_and_imports_nothing(login):
    client = login("ada")
    for document, error in [
        ('{"mcpServers": {"a": ', "not valid JSON"),
        ('{"servers_list": []}', 'expected an object under "mcpServers"'),
        (
            '{"mcpServers": {"ok": {"command": "x"}, "bad": {"args": []}}}',
            "bad: needs either a command or a url",
        ),
        ("", "paste a JSON document or choose a file"),
    ]:
        response = client.post(f"{CHANGELIST}import/", {"document": document})
        assert response.status_code == 400, document
        assert error in text(response), document
    assert McpServer.objects.count() == 0


def test_export_action_downloads_mcpservers_json_without_literal_secrets(login, db):
    McpServer.objects.create(
        name="github",
        command="npx",
        args=["-y", "@modelcontextprotocol/server-github"],
        env={"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_literal_secret_value_123456", "LOG": "env:LOG_LEVEL"},
    )
    McpServer.objects.create(
        name="remote",
        transport="http",
        url="https://mcp.example.com/mcp",
        headers={"Authorization": "Bearer xyz"},
    )
    response = login("ada").post(
        CHANGELIST,
        {"action": "export_json", "_selected_action": list(McpServer.objects.values_list("pk", flat=True))},
    )
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="mcpServers.json"'
    body = response.content.decode()
    assert "ghp_literal_secret_value" not in body and "Bearer xyz" not in body
    document = json.loads(body)
    assert document["mcpServers"]["github"]["env"] == {
        "GITHUB_PERSONAL_ACCESS_TOKEN": "env:GITHUB_PERSONAL_ACCESS_TOKEN",
        "LOG": "env:LOG_LEVEL",
    }
    assert document["mcpServers"]["remote"] == {
        "type": "http",
        "url": "https://mcp.example.com/mcp",
        "headers": {"Authorization": "env:REMOTE_AUTHORIZATION"},
    }


def test_the_form_rejects_configs_that_cannot_work(login):
    client = login("ada")
    base = {
        "name": "srv",
        "transport": "stdio",
        "command": "",
        "args": "[]",
        "env": "{}",
        "url": "",
        "headers": "{}",
        "enabled": "on",
        "connect_timeout": "15",
        "call_timeout": "60",
        "auth_mode": "none",  # the form's select always posts a value
    }
    for overrides, error in [
        ({}, "a stdio server needs a command"),
        ({"command": "x", "args": '"--flag"'}, "must be a JSON array of strings"),
        ({"command": "x", "env": '{"A": 1}'}, "must be a JSON object whose values are strings"),
        ({"transport": "http"}, "needs an http(s) url"),
        ({"command": "x", "name": "a__b"}, "no '__'"),
    ]:
        response = client.post(f"{CHANGELIST}add/", {**base, **overrides})
        assert response.status_code == 200, overrides
        assert error in text(response), overrides
    assert client.post(f"{CHANGELIST}add/", {**base, "command": "x"}).status_code == 302


def test_staff_without_mcp_permissions_get_403(login, env_query_server):
    client = login("stan")
    assert client.get(CHANGELIST).status_code == 403
    assert client.get(f"{CHANGELIST}import/").status_code == 403
    assert client.post(f"{CHANGELIST}{env_query_server.pk}/test-connection/").status_code == 403


def _upload(content: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("mcp.json", content.encode(), content_type="application/json")


def test_secret_looking_values_are_masked_on_the_edit_page_and_kept_on_save(login, db):
    server = McpServer.objects.create(
        name="remote",
        transport="http",
        url="https://mcp.example.com/mcp",
        headers={"Authorization": "Bearer abcdefghijklmnopqrst", "X-Team": "blue", "X-Key": "env:REMOTE_KEY"},
    )
    client = login("ada")
    body = client.get(f"{CHANGELIST}{server.pk}/change/").content.decode()
    assert "abcdefghijklmnopqrst" not in body
    shown = html.unescape(body)
    assert '"Authorization": "********"' in shown and '"X-Team": "blue"' in shown
    assert '"X-Key": "env:REMOTE_KEY"' in shown
    data = {
        "name": "remote",
        "transport": "http",
        "command": "",
        "args": "[]",
        "env": "{}",
        "url": "https://mcp.example.com/v2/mcp",
        "headers": json.dumps({"Authorization": "********", "X-Team": "green", "X-Key": "env:REMOTE_KEY"}),
        "enabled": "on",
        "connect_timeout": "15",
        "call_timeout": "60",
        "auth_mode": "none",  # the form's select always posts a value
    }
    assert client.post(f"{CHANGELIST}{server.pk}/change/", data).status_code == 302
    server.refresh_from_db()
    assert server.url == "https://mcp.example.com/v2/mcp"
    assert server.headers == {
        "Authorization": "Bearer abcdefghijklmnopqrst",
        "X-Team": "green",
        "X-Key": "env:REMOTE_KEY",
    }
    data["headers"] = json.dumps({"Authorization": "Bearer new-token-value-000000", "Cookie": "********"})
    response = client.post(f"{CHANGELIST}{server.pk}/change/", data)
    assert "enter the value of &#x27;Cookie&#x27;" in response.content.decode()
    data["headers"] = json.dumps({"Authorization": "Bearer new-token-value-000000"})
    assert client.post(f"{CHANGELIST}{server.pk}/change/", data).status_code == 302
    server.refresh_from_db()
    assert server.headers == {"Authorization": "Bearer new-token-value-000000"}
