"""Payloads in model text, tool arguments and results, tool definitions and titles never execute.

They are placed where the app renders them (chat page with its trace, the admin's approval page, the
auditor's run page); every page is opened in a real browser that counts dialogs, a canary global
and requests to a beacon server. CSP is left on, as in production.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from chatapp.models import Conversation, Message, Round, Run, ToolCall, ToolPolicy
from tests.browser.xss_corpus import payloads

pytestmark = pytest.mark.django_db(transaction=True)
OPEN_ALL = "document.querySelectorAll('details').forEach(d => { d.open = true; })"


@pytest.fixture
def beacon():
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's naming
            hits.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", hits
    server.shutdown()


def plant(owner, corpus: list[str]) -> tuple[Conversation, list[Run], list[ToolCall]]:
    runs, calls = [], []
    convo = None
    for i, payload in enumerate(corpus):
        if i % 10 == 0:
            convo = Conversation.objects.create(owner=owner, title=payload[:200])
        user = Message.objects.create(conversation=convo, role="user", content=payload)
        run = Run.objects.create(
            conversation=convo,
            user_message=user,
            provider_name="demo",
            model=payload[:100],
            status="succeeded" if i % 7 else "failed",
            error=payload,
            error_class="X" + payload[:50],
            final_text=payload,
        )
        Message.objects.create(conversation=convo, run=run, role="assistant", content=f"Answer: {payload}")
        response = {
            "choices": [
                {
                    "index": 0,
                    "text": payload,
                    "reasoning": "",
                    "tool_calls": [],
                    "finish_reason": "stop",
                    "finish_reason_raw": payload[:50],
                    "refusal": None,
                }
            ],
            "usage": {},
        }
        Round.objects.create(
            run=run,
            index=0,
            provider_name="demo",
            model=payload[:100],
            finish_reason="stop",
            finish_reason_raw=payload[:60],
            request={"messages": [{"role": "user", "content": payload}]},
            response=response,
            usage={"prompt_tokens": 1, "completion_tokens": 1},
        )
        calls.append(
            ToolCall.objects.create(
                run=run,
                round_index=0,
                index=0,
                call_id=f"call_{i}",
                name=payload[:200],
                server=payload[:40],
                arguments=json.dumps({"path": payload}),
                result=json.dumps({"success": False, "error": payload}),
                status="awaiting_approval" if i % 5 == 0 else "failed",
                risk="high",
                error_code=payload[:40],
                definition={
                    "name": payload,
                    "description": payload,
                    "parameters": {"type": "object", "description": payload},
                },
                definition_hash=payload[:80],
            )
        )
        runs.append(run)
    return convo, runs, calls


def test_no_payload_executes_anywhere(cast, demo_provider, page_for, beacon):
    beacon_url, hits = beacon
    corpus = payloads(beacon_url)
    assert len(corpus) >= 50
    _, runs, calls = plant(cast["alice"], corpus)
    for i, payload in enumerate(corpus[:20]):
        ToolPolicy.objects.create(pattern=f"evil_{i}", description_override=payload)
    conversations = sorted({r.conversation_id for r in runs})

    dialogs: list[str] = []
    watched = []

    def watch(page):
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("request", lambda r: r.url.startswith(beacon_url) and hits.append(r.url))
        watched.append(page)
        return page

    alice = watch(page_for("alice", "alice-pass"))
    for convo_id in conversations:
        alice.goto(f"/c/{convo_id}/")
        alice.locator("details.trace").first.wait_for(state="attached")
        alice.evaluate(OPEN_ALL)
        assert alice.evaluate("window.__xss === undefined")
    alice.goto("/?q=script")

    admin = watch(page_for("ada", "ada-pass"))
    for call in calls[::5]:
        admin.goto(f"/admin/chatapp/toolcall/{call.pk}/change/")
        assert admin.evaluate("window.__xss === undefined")
    for path in (
        "/admin/chatapp/toolcall/?queue=all",
        "/admin/chatapp/toolpolicy/",
        "/admin/chatapp/run/",
        "/admin/chatapp/conversation/",
    ):
        admin.goto(path)
        assert admin.evaluate("window.__xss === undefined")

    auditor = watch(page_for("otto", "otto-pass"))
    auditor.goto("/audit/")
    for run in runs[::4]:
        auditor.goto(f"/audit/runs/{run.pk}/")
        auditor.evaluate(OPEN_ALL)
        assert auditor.evaluate("window.__xss === undefined")

    for page in watched:
        page.wait_for_load_state("networkidle")
    assert dialogs == []
    assert hits == []
