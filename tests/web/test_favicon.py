"""The app has an icon: pages name it, and ``/favicon.ico`` (asked for by browsers on pages that
name none, the admin's) leads to it instead of a 404."""

from __future__ import annotations

from django.test import Client


def test_pages_name_the_icon_and_favicon_ico_leads_to_it(cast):
    client = Client()
    login = client.get("/login/")
    assert b'rel="icon"' in login.content and b"favicon" in login.content
    answer = client.get("/favicon.ico")
    assert answer.status_code == 301 and answer["Location"].endswith(".svg")
    icon = client.get(answer["Location"])
    assert icon.status_code == 200 and "svg" in icon["Content-Type"]
    assert b"<svg" in b"".join(icon.streaming_content) if icon.streaming else b"<svg" in icon.content
