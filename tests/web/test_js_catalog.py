"""The JavaScript catalogue: the pages link it under a URL that names its language and content, which
browsers keep for a year (before, every page load asked the server for it and the page's scripts
waited: bench/page); it is rendered once per language and process; the plain ``/jsi18n/`` still
serves the active language's."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from chatapp import js_catalog
from chatapp.js_catalog import catalog

pytestmark = pytest.mark.django_db

LINK = re.compile(r'<script src="(/jsi18n/([\w-]+)/([0-9a-f]{16})\.js)"')


def linked(client: Client, path: str = "/") -> tuple[str, str, str]:
    page = client.get(path)
    assert page.status_code == 200
    found = LINK.search(page.content.decode())
    assert found, "the page links no versioned catalogue"
    return found[1], found[2], found[3]


def test_the_page_links_a_catalogue_browsers_keep(cast, django_assert_num_queries):
    client = Client()
    client.force_login(cast["alice"])
    url, language, _ = linked(client)
    assert language == "en"
    catalog(language)  # rendered once per process, maybe by an earlier test
    with django_assert_num_queries(0):  # answered before sessions and users are read
        response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/javascript")
    control = response["Cache-Control"]
    assert "immutable" in control and "max-age=31536000" in control and "public" in control
    assert "Cookie" not in response.get("Vary", "")  # the URL alone decides: one cache entry for everyone
    assert "Set-Cookie" not in response
    # The same catalogue as the plain URL's, which is not to be kept.
    plain = client.get("/jsi18n/")
    assert plain.content == response.content
    assert "no-cache" in plain["Cache-Control"]


def test_each_language_has_its_own_url_and_strings(cast):
    english, chinese = Client(), Client(HTTP_ACCEPT_LANGUAGE="zh-CN")
    for client in (english, chinese):
        client.force_login(cast["alice"])
    en_url, _, en_version = linked(english)
    zh_url, language, zh_version = linked(chinese)
    assert language == "zh-hans" and zh_version != en_version
    body = chinese.get(zh_url).content.decode()
    assert "\\u6b63\\u5728\\u53d1\\u9001" in body or "正在发送" in body  # Sending…
    # The URL, not the request's language, decides: an English reader of the Chinese URL gets Chinese.
    assert english.get(zh_url).content == chinese.get(zh_url).content


def test_an_old_version_gets_todays_catalogue_not_to_be_kept_and_an_unknown_language_404(cast):
    client = Client()
    url, language, version = linked(client, "/login/")
    stale = client.get(f"/jsi18n/{language}/{'0' * 16}.js")
    assert stale.status_code == 200
    assert stale.content == client.get(url).content
    assert "no-cache" in stale["Cache-Control"] and "immutable" not in stale["Cache-Control"]
    assert client.get(f"/jsi18n/xx/{version}.js").status_code == 404


def test_the_catalogue_is_rendered_once_per_language(cast, monkeypatch):
    from django.views.i18n import JavaScriptCatalog

    monkeypatch.setattr(js_catalog, "_catalogs", {})
    rendered = []
    original = JavaScriptCatalog.get

    def counting(self, request, *args, **kwargs):
        rendered.append(request)
        return original(self, request, *args, **kwargs)

    monkeypatch.setattr(JavaScriptCatalog, "get", counting)
    client = Client()
    client.force_login(cast["alice"])
    for _ in range(3):
        url, _, _ = linked(client)
        assert client.get(url).status_code == 200
    assert len(rendered) == 1
