"""The frame kinds live in chatapp/frames.py only: the chat page hands them to chat.js."""

from __future__ import annotations

import json
import re
from pathlib import Path

from chatapp.frames import Kind
from chatapp.views.chat import frame_protocol

CHAT_JS = (Path(__file__).resolve().parents[2] / "static/js/chat.js").read_text(encoding="utf-8")


def test_chat_js_names_no_frame_kind_itself():
    compared = re.findall(r"frame\.type\s*===\s*([^\s)|&]+)", CHAT_JS)
    assert compared and all(c.startswith("K.") for c in compared), compared
    assert {c[2:] for c in compared} <= {k.name for k in Kind}


def test_the_page_renders_the_protocol_for_chat_js(cast, client):
    from chatapp.models import Conversation

    client.force_login(cast["alice"])
    convo = Conversation.objects.create(owner=cast["alice"])
    body = client.get(f"/c/{convo.pk}/").content.decode()
    script = re.search(r'<script id="frame-protocol" type="application/json">(.*?)</script>', body, re.S)
    assert script and json.loads(script.group(1)) == json.loads(json.dumps(frame_protocol()))
    assert frame_protocol()["kinds"]["STATUS"] == "status"
