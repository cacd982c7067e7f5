"""Issue 13 item 2 through the real stack (daphne + Celery worker + demo model): the official `openai`
client against /v1, and a plain HTTP client against the REST API (SSE with Last-Event-ID resume,
approvals with the approver scope, cancel)."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from chatapp.models import Message, Run, RunEvent, ToolCall
from chatapp.services import api_keys

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def alice_key(cast):
    return api_keys.create_key(cast["alice"], "tests", "chat,traces").secret


def ai(live_stack, secret: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{live_stack.base_url}/v1", api_key=secret, max_retries=0, timeout=90)


def http(live_stack, secret: str) -> httpx.Client:
    return httpx.Client(base_url=live_stack.base_url, headers={"Authorization": f"Bearer {secret}"}, timeout=60)


def test_openai_client_lists_models_and_completes(demo_provider, live_stack, alice_key):
    client = ai(live_stack, alice_key)
    assert "demo" in [m.id for m in client.models.list()]
    answer = client.chat.completions.create(
        model="demo",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hello there"},
            {"role": "assistant", "content": "Hi! How can I help?"},
            {"role": "user", "content": "Tell me about clearloop"},
        ],
    )
    run = Run.objects.get(pk=answer.model_extra["clearloop"]["run_id"])
    assert run.status == "succeeded" and run.conversation.owner.username == "alice"
    assert answer.choices[0].message.content == run.final_text and run.final_text
    assert answer.choices[0].finish_reason == "stop" and answer.object == "chat.completion"
    assert answer.usage.total_tokens == run.prompt_tokens + run.completion_tokens > 0
    stored = list(Message.objects.filter(conversation=run.conversation).values_list("role", "content"))
    assert stored[:4] == [
        ("system", "Be brief."), ("user", "Hello there"), ("assistant", "Hi! How can I help?"),
        ("user", "Tell me about clearloop"),
    ]
    with pytest.raises(openai.UnprocessableEntityError) as bad:
        client.chat.completions.create(model="gpt-9-imaginary", messages=[{"role": "user", "content": "x"}])
    assert "does not exist" in str(bad.value)


def test_openai_client_streams_with_tools_in_the_extension_field(demo_tools, live_stack, cast):
    secret = api_keys.create_key(cast["alice"], "tests", "chat").secret
    stream = ai(live_stack, secret).chat.completions.create(
        model="demo",
        messages=[{"role": "user", "content": 'Read it: [[demo:call read_file {"path": "config.yaml"}]]'}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    extensions = [c.model_extra["clearloop"] for c in chunks if c.model_extra.get("clearloop")]
    calls = [e["data"] for e in extensions if e["type"] == "tool_call"]
    assert any(c["name"] == "read_file" and c["status"] == "succeeded" for c in calls), extensions
    assert any("Qwen3.6-Plus" in (c.get("result") or "") for c in calls)  # the file's content came back
    assert not any(c.choices and c.choices[0].delta.tool_calls for c in chunks)  # never for the client to run
    finals = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(finals) == 1 and finals[0].choices[0].finish_reason == "stop"
    run = Run.objects.get(pk=finals[0].model_extra["clearloop"]["data"]["run_id"])
    assert run.status == "succeeded" and run.final_text and run.final_text in text
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == run.prompt_tokens + run.completion_tokens
    seqs = [e["seq"] for e in extensions if "seq" in e]
    assert seqs == sorted(set(seqs))  # each event once, in order


def _sse(response: httpx.Response, stop_after: int | None = None) -> list[dict]:
    events, current = [], {}
    for line in response.iter_lines():
        if line == "":
            if "data" in current:
                events.append(current)
                if stop_after and len([e for e in events if "id" in e]) >= stop_after:
                    return events
            current = {}
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(": ")
            current[field] = value
    return events


def test_rest_send_and_sse_resume_gives_every_event_once(demo_provider, live_stack, alice_key):
    with http(live_stack, alice_key) as client:
        cid = client.post("/api/conversations", json={"title": "via REST"}).json()["id"]
        sent = client.post(f"/api/conversations/{cid}/messages", json={"text": "Tell me about clearloop"})
        assert sent.status_code == 202, sent.text
        run_id = sent.json()["run_id"]
        with client.stream("GET", f"/api/runs/{run_id}/events") as first:
            assert first.headers["content-type"].startswith("text/event-stream")
            part = _sse(first, stop_after=3)  # then the connection drops
        last = int([e for e in part if "id" in e][-1]["id"])
        with client.stream("GET", f"/api/runs/{run_id}/events", headers={"Last-Event-ID": str(last)}) as second:
            rest = _sse(second)
        assert rest[-1]["event"] == "end" and json.loads(rest[-1]["data"])["status"] == "succeeded"
        got = [int(e["id"]) for e in part + rest if "id" in e]
        stored = list(RunEvent.objects.filter(run_id=run_id).order_by("seq").values_list("seq", flat=True))
        assert got == stored  # every event once, in order, across the drop
        run = client.get(f"/api/runs/{run_id}").json()
        assert run["status"] == "succeeded" and run["text"]
        trace = client.get(f"/api/runs/{run_id}/trace").json()
        assert [e["seq"] for e in trace["events"]] == stored
        convo = client.get(f"/api/conversations/{cid}").json()
        assert [m["role"] for m in convo["messages"]] == ["user", "assistant"]
        bad = client.get(f"/api/runs/{run_id}/events", headers={"Last-Event-ID": "abc"})
        assert bad.status_code == 400


def test_approvals_need_the_approver_scope(demo_tools, live_stack, cast, alice_key):
    ada_key = api_keys.create_key(cast["ada"], "approver", "approve").secret
    with http(live_stack, alice_key) as alice, http(live_stack, ada_key) as ada:
        cid = alice.post("/api/conversations", json={}).json()["id"]
        text = "send a text message to 13800000000 saying the deploy finished"
        run_id = alice.post(f"/api/conversations/{cid}/messages", json={"text": text}).json()["run_id"]
        with alice.stream("GET", f"/api/runs/{run_id}/events") as events:
            for line in events.iter_lines():
                if line == "event: approval_requested":
                    break
        call = ToolCall.objects.get(run_id=run_id, status="awaiting_approval")
        refused = alice.post(f"/api/approvals/{call.pk}", json={"decision": "approve"})
        assert refused.status_code == 403  # a chat+traces key cannot approve
        assert alice.get("/api/approvals").status_code == 403
        pending = ada.get("/api/approvals").json()
        assert [p["id"] for p in pending] == [call.pk] and pending[0]["user"] == "alice"
        decided = ada.post(f"/api/approvals/{call.pk}", json={"decision": "approve", "reason": "ok"})
        assert decided.status_code == 200 and decided.json()["decision"] == "approved"
        again = ada.post(f"/api/approvals/{call.pk}", json={"decision": "deny"})
        assert again.status_code == 409
        with alice.stream("GET", f"/api/runs/{run_id}/events") as events:
            tail = _sse(events)
        assert json.loads(tail[-1]["data"])["status"] == "succeeded"
        call.refresh_from_db()
        assert call.status == "succeeded" and call.approval.decided_by == cast["ada"]


def test_cancel_through_the_api(demo_provider, live_stack, alice_key, cast):
    bob_key = api_keys.create_key(cast["bob"], "b", "chat,traces").secret
    with http(live_stack, alice_key) as client, http(live_stack, bob_key) as bob:
        cid = client.post("/api/conversations", json={}).json()["id"]
        run_id = client.post(f"/api/conversations/{cid}/messages", json={"text": "[[demo:slow]] go on"}).json()[
            "run_id"
        ]
        assert bob.post(f"/api/runs/{run_id}/cancel").status_code == 404
        assert bob.get(f"/api/runs/{run_id}").status_code == 404
        assert client.post(f"/api/runs/{run_id}/cancel").status_code == 200
        with client.stream("GET", f"/api/runs/{run_id}/events") as events:
            tail = _sse(events)
        assert json.loads(tail[-1]["data"])["status"] == "cancelled"


def test_seed_000_6_through_the_openai_client_then_the_daily_budget(demo_tools, live_stack, cast):
    """The issue's "done when": the 000 §6 files scenario streamed through clearloop with the official
    client (three rounds, two parallel reads, a write), then a daily token limit with a clear message."""
    from chatapp.models import Quota, Round

    secret = api_keys.create_key(cast["alice"], "script", "chat").secret
    client = ai(live_stack, secret)
    request = "读取 config.yaml，同时列出当前目录中的 Markdown 文件，然后把分析结果写入 report.md。"
    chunks = list(client.chat.completions.create(
        model="demo", messages=[{"role": "system", "content": "你是一个文件分析助手。"},
                                {"role": "user", "content": request}], stream=True))
    calls = [c.model_extra["clearloop"]["data"] for c in chunks
             if (c.model_extra.get("clearloop") or {}).get("type") == "tool_call"]
    done = {c["name"] for c in calls if c["status"] == "succeeded"}
    assert {"read_file", "search_files", "write_file"} <= done, calls
    run_id = chunks[-1].model_extra["clearloop"]["data"]["run_id"]
    assert Run.objects.get(pk=run_id).status == "succeeded"
    assert Round.objects.filter(run_id=run_id).count() == 3
    used = sum((r.usage.get("prompt_tokens") or 0) + (r.usage.get("completion_tokens") or 0)
               for r in Round.objects.filter(run__conversation__owner=cast["alice"]))
    Quota.objects.create(user=cast["alice"], tokens_per_day=used)
    with pytest.raises(openai.RateLimitError) as refused:
        client.chat.completions.create(model="demo", messages=[{"role": "user", "content": "again"}], stream=True)
    assert "The daily token budget is used up" in str(refused.value)
