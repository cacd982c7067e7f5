"""Issue 16 item 8 through the real stack (review M6, L5, L6, L8, L9): frames the page gets are
bounded, bad websocket input is ignored, NUL is refused with a reason, sockets per user are capped."""

from __future__ import annotations

import asyncio
import json

import pytest
import websockets

from chatapp.models import Conversation, Message, Round, Run, RunEvent, ToolCall
from tests.integration.client import LiveClient, session_for

pytestmark = pytest.mark.django_db(transaction=True)

TEN_MIB = 10 * 1024 * 1024
DAPHNE_LIMIT = 1024 * 1024


def finished_run_with_a_huge_call(owner) -> Run:
    """What a 10 MiB write_file leaves behind (the tool refuses it; the call is stored all the same)."""
    convo = Conversation.objects.create(owner=owner)
    message = Message.objects.create(conversation=convo, role="user", content="write it", payload={})
    run = Run.objects.create(
        conversation=convo, user_message=message, provider_name="demo", model="m", status="succeeded"
    )
    Round.objects.create(run=run, index=0, provider_name="demo", model="m", finish_reason="tool_calls")
    arguments = json.dumps({"path": "huge.txt", "content": "A" * TEN_MIB})
    result = "B" * TEN_MIB
    ToolCall.objects.create(
        run=run,
        round_index=0,
        index=0,
        call_id="c1",
        name="write_file",
        arguments=arguments,
        status="failed",
        result=result,
        is_error=True,
    )
    frames = [
        ("status", {"status": "running"}),
        (
            "delta",
            {
                "round_index": 0,
                "text": "",
                "reasoning": "",
                "tool_calls": [{"index": 0, "arguments": arguments}],
            },
        ),
        (
            "tool_call",
            {
                "round_index": 0,
                "index": 0,
                "call_id": "c1",
                "name": "write_file",
                "status": "failed",
                "arguments": arguments,
                "result": result,
            },
        ),
        ("run_finished", {"text": "done", "partial": False}),
        ("status", {"status": "succeeded"}),
    ]
    for seq, (kind, payload) in enumerate(frames, 1):
        RunEvent.objects.create(run=run, seq=seq, type=kind, payload=payload, durable=kind != "delta")
    return run


def test_a_10_mib_tool_call_replays_folded_and_the_socket_stays_up(cast, demo_provider, live_stack):
    run = finished_run_with_a_huge_call(cast["alice"])
    client = LiveClient(live_stack.base_url, session_for(cast["alice"]))

    async def replay_twice():
        async with client.ws(run.conversation_id) as ws:
            received = []
            for _ in range(2):  # the second resume proves the first did not close the socket
                await ws.send(json.dumps({"resume": {str(run.pk): 0}, "since_run": run.pk}))
                while True:
                    raw = await asyncio.wait_for(ws.recv(), 30)
                    received.append(raw)
                    if json.loads(raw)["type"] == "replay_done":
                        break
            return received

    received = asyncio.run(replay_twice())
    frames = [json.loads(r) for r in received]
    assert [f["type"] for f in frames].count("replay_done") == 2
    assert max(len(r.encode()) for r in received) < DAPHNE_LIMIT // 2
    call = next(f for f in frames if f["type"] == "tool_call")
    assert call["data"]["name"] == "write_file" and call["data"]["status"] == "failed"
    assert "folded: 10,485,7" in call["data"]["result"]
    # The page's fragment shows it folded too, not as 20 MiB of HTML.
    fragment = client.http.get(f"/runs/{run.pk}/fragment/")
    assert fragment.status_code == 200 and len(fragment.content) < 500_000
    assert "folded:" in fragment.text and "show all" in fragment.text


BAD_INPUT = [
    b"\xff\xfe\x00garbage",
    "not json",
    '{"resume": {"1": 0}, "since_run": "abc"}',
    '{"resume": {}, "since_run": {"x": 1}}',
    '{"resume": {}, "since_run": 1000000000000000000000000}',
    '{"resume": {"1000000000000000000000000000000": 0}}',
    '{"resume": [1, 2]}',
    '{"resume": {"1": true}}',
]


def test_malformed_websocket_input_is_ignored_with_a_warning(cast, demo_provider, live_stack):
    convo = Conversation.objects.create(owner=cast["alice"])
    client = LiveClient(live_stack.base_url, session_for(cast["alice"]))
    log = live_stack.log_dir / "web.log"
    before = log.read_text(errors="replace") if log.exists() else ""

    async def attack():
        async with client.ws(convo.pk) as ws:
            for bad in BAD_INPUT:
                await ws.send(bad)
            await ws.send('{"resume": {}}')  # still answered: the socket survived all of the above
            return json.loads(await asyncio.wait_for(ws.recv(), 10))

    assert asyncio.run(attack()) == {"type": "replay_done", "count": 0}
    after = (log.read_text(errors="replace") if log.exists() else "")[len(before) :]
    assert "Traceback" not in after
    assert after.count("websocket message ignored") >= len(BAD_INPUT) - 1
    assert "binary websocket message ignored" in after


def test_a_message_with_a_nul_character_is_refused_with_a_reason(cast, demo_provider, live_stack):
    convo = Conversation.objects.create(owner=cast["alice"])
    client = LiveClient(live_stack.base_url, session_for(cast["alice"]))
    response = client.send(convo.pk, "a\x00b")
    assert response.status_code == 422
    assert "NUL character" in response.text
    assert not Run.objects.filter(conversation=convo).exists()
    assert not Message.objects.filter(conversation=convo).exists()


def test_one_user_may_hold_only_so_many_websockets(cast, demo_provider, live_stack, settings):
    convo = Conversation.objects.create(owner=cast["alice"])
    client = LiveClient(live_stack.base_url, session_for(cast["alice"]))
    allowed = settings.MAX_WEBSOCKETS_PER_USER

    async def open_many():
        sockets = [await client.ws(convo.pk) for _ in range(allowed)]
        try:
            extra = await client.ws(convo.pk)
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(extra.recv(), 10)
            refused = closed.value.rcvd.code
            await sockets.pop().close()
            again = await client.ws(convo.pk)  # a closed one frees its place
            await again.send('{"resume": {}}')
            answer = json.loads(await asyncio.wait_for(again.recv(), 10))
            await again.close()
            return refused, answer
        finally:
            for ws in sockets:
                await ws.close()

    refused, answer = asyncio.run(open_many())
    assert refused == 4429
    assert answer["type"] == "replay_done"
