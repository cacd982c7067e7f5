"""A logged-in HTTP + websocket client against a live stack, as a browser would be."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import websockets


class LiveClient:
    def __init__(self, base_url: str, session_key: str) -> None:
        self.base_url = base_url
        self.cookies = {"sessionid": session_key}
        self.http = httpx.Client(base_url=base_url, cookies=self.cookies, timeout=30, follow_redirects=False)

    def csrf(self, path: str) -> str:
        page = self.http.get(path)
        page.raise_for_status()
        token = (
            self.http.cookies.get("csrftoken")
            or re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
        )
        return token

    def send(self, conversation_id: int, text: str) -> httpx.Response:
        token = self.csrf(f"/c/{conversation_id}/")
        return self.http.post(
            f"/c/{conversation_id}/send/",
            data={"message": text},
            headers={"X-CSRFToken": token, "HX-Request": "true", "Referer": self.base_url + "/"},
        )

    def ws(self, conversation_id: int) -> Any:
        url = self.base_url.replace("http://", "ws://") + f"/ws/conversations/{conversation_id}/"
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        return websockets.connect(url, additional_headers={"Cookie": cookie, "Origin": self.base_url})


def session_for(user) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


async def frames_until(ws, predicate, limit: int = 10_000) -> list[dict[str, Any]]:
    seen = []
    for _ in range(limit):
        frame = json.loads(await ws.recv())
        seen.append(frame)
        if predicate(frame):
            return seen
    raise AssertionError("predicate never matched")
