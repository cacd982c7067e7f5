"""A screenshot tool's image reaches the models that take images in tool results, and only those.

The real loop calls ``screenshot`` on a real MCP server (``tests/mcp/servers/hosted_features_server.py``,
stdio), then sends its result to each provider adapter over HTTP; a strict emulator of that API
(``media_emulators.py``) checks the tool result as the provider documents it.
"""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import pytest
from media_emulators import TOOL, MediaEmulator
from provider_helpers import make_provider

from agent.loop import AllowAll, LoopSettings, run_agent
from agent.mcp import McpPool, McpServerConfig, McpToolbox
from agent.messages import Message
from agent.sink import ListSink
from agent.state import RunState
from tests.mcp.mcp_helpers import free_port, wait_for_port

pytestmark = pytest.mark.live  # spawns MCP servers
HOSTED = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "hosted_features_server.py"
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(params=["stdio", "http"])
async def hosted_box(request):
    """The screenshot server over stdio, or over Streamable HTTP."""
    pool = McpPool()
    proc = None
    if request.param == "stdio":
        config = McpServerConfig(name="hosted", command=sys.executable, args=(str(HOSTED),))
    else:
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, str(HOSTED), "--http", "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(port, proc)
        config = McpServerConfig(name="hosted", transport="http", url=f"http://127.0.0.1:{port}/mcp")
    yield McpToolbox(pool, [config])
    await pool.aclose()
    if proc is not None:
        proc.terminate()
        proc.wait(10)


async def tool_loop(kind: str, preset: str, box, http, tool: str = TOOL, **settings):
    emulator = MediaEmulator(kind, tool)
    await emulator.start()
    try:
        provider = make_provider(http, emulator.base_url, kind, preset, max_retries=0, **settings)
        state = RunState.start("media", [Message.system("test"), Message.user("look at the page")])
        step = await run_agent(state, provider, box, ListSink(), LoopSettings(), AllowAll())
    finally:
        await emulator.stop()
    assert state.calls[(0, 0)].name == tool and state.calls[(0, 0)].status == "succeeded"
    assert len(emulator.tool_results) == 1, "round 2 was sent once"
    return step, emulator.tool_results[0]


async def test_anthropic_gets_the_image_as_a_tool_result_image_block(hosted_box, http):
    step, result = await tool_loop("anthropic", "anthropic", hosted_box, http)
    assert step.text == "I see it."
    text, image = result["content"]
    assert text["type"] == "text" and "Page title: Example" in text["text"]
    assert "[image: image/png, " in text["text"]
    assert image["type"] == "image" and image["source"]["type"] == "base64"
    assert image["source"]["media_type"] == "image/png"
    assert base64.b64decode(image["source"]["data"]).startswith(PNG)


async def test_responses_gets_the_image_as_input_image_in_the_function_call_output(hosted_box, http):
    step, result = await tool_loop("openai_responses", "openai_responses", hosted_box, http)
    assert step.text == "I see it."
    assert result["call_id"] == "call_1"
    text, image = result["output"]
    assert text["type"] == "input_text" and "[image: image/png, " in text["text"]
    assert image["type"] == "input_image"
    head, data = image["image_url"].split(",", 1)
    assert head == "data:image/png;base64" and base64.b64decode(data).startswith(PNG)


async def test_chat_completions_gets_the_text_note_only(hosted_box, http):
    step, result = await tool_loop("openai_chat", "openai", hosted_box, http)
    assert step.text == "I read the note."
    assert isinstance(result["content"], str)
    assert "[image: image/png, " in result["content"] and "Page title: Example" in result["content"]
    assert "iVBOR" not in result["content"]  # no bytes smuggled into the text


async def test_a_model_without_vision_gets_the_note_by_capability_not_by_provider(hosted_box, http):
    # An admin's capability override (e.g. a text-only model behind the Anthropic API).
    step, result = await tool_loop(
        "anthropic", "anthropic", hosted_box, http, capability_overrides={"tool_result_media": []}
    )
    assert isinstance(result["content"], str) and "[image: image/png, " in result["content"]


@pytest.mark.parametrize(
    ("kind", "preset"), [("anthropic", "anthropic"), ("openai_responses", "openai_responses")]
)
async def test_audio_is_a_note_everywhere(hosted_box, http, kind, preset):
    # No supported API takes audio inside a tool result; the emulators would refuse an audio part.
    _, result = await tool_loop(kind, preset, hosted_box, http, tool="hosted__recording")
    sent = result["content"] if kind == "anthropic" else result["output"]
    assert isinstance(sent, str) and "[audio: audio/wav, " in sent


async def test_a_resumed_run_sends_the_same_image_bytes(hosted_box, http):
    """The image is stored with the call: a run rebuilt from its stored events sends the same bytes."""
    import json

    from agent.events import DURABLE
    from agent.loop.history import transcript
    from chatapp.event_codec import event_from_row, event_payload, event_type
    from chatapp.redaction import without_media_data

    emulator = MediaEmulator("anthropic")
    await emulator.start()
    try:
        provider = make_provider(http, emulator.base_url, "anthropic", "anthropic", max_retries=0)
        start = [Message.system("test"), Message.user("look at the page")]
        state, sink = RunState.start("media", start), ListSink()
        await run_agent(state, provider, hosted_box, sink, LoopSettings(), AllowAll())
    finally:
        await emulator.stop()
    # Stored as the worker stores them (JSON), read back as a resumed worker reads them.
    rows = [
        (event_type(e), json.loads(json.dumps(event_payload(e))))
        for e in sink.events
        if isinstance(e, DURABLE)
    ]
    rebuilt = RunState.rebuild("media", start, [event_from_row(kind, payload) for kind, payload in rows])
    original = [m for m in transcript(state) if m.role == "tool"][0].media
    again = [m for m in transcript(rebuilt) if m.role == "tool"][0].media
    assert original and again == original
    sent = emulator.tool_results[0]["content"][1]["source"]["data"]
    assert again[0].data == sent
    # What people are shown of that event has the type and size, not the bytes.
    shown = without_media_data(next(p for k, p in rows if k == "tool_call" and p.get("media")))
    assert shown["media"] == [{"kind": "image", "mime_type": "image/png", "bytes": len(sent) * 3 // 4}]
