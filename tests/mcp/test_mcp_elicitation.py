"""URL-mode elicitation (spec 2025-11-25 ``client/elicitation.mdx``), through the real loop and a real
MCP server (``servers/hosted_features_server.py`` over stdio, on the 2025-11-25 handshake where a
server asks with ``elicitation/create``)."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
from mcp_helpers import HERE

from agent.loop import LoopSettings
from agent.mcp import McpPool, McpServerConfig, McpToolbox
from agent.sink import ListSink
from tests.loop.loop_doubles import ScriptedProvider, call, reply, start_messages, tool_results

pytestmark = pytest.mark.live  # spawns MCP servers
SERVER = str(HERE / "servers" / "hosted_features_server.py")
LINK = "https://accounts.example.com/connect?flow=4f2a"


@pytest.fixture
async def hosted(request, tmp_path):
    """The server on the 2025-11-25 handshake (MCPServer 2.x offers ``ctx.elicit_url`` only there),
    or on the era ``auto`` negotiates (2026-07-28) when a test asks for it."""
    era = getattr(request, "param", "legacy")
    runs = tmp_path / "runs.txt"
    pool = McpPool(mode=era)
    config = McpServerConfig(
        name="hosted", command=sys.executable, args=(SERVER,), env={"HOSTED_RUNS": str(runs)}
    )
    box = McpToolbox(pool, [config])
    await box.list_tools()
    yield box, runs, era
    await pool.aclose()


def one_call(name: str, args: dict) -> ScriptedProvider:
    def respond(request):
        return reply(text="done") if tool_results(request) else reply(calls=[call("c1", name, args)])

    return ScriptedProvider(respond)


async def run(box, sink, name, args, **settings):
    from agent.loop import AllowAll, run_agent
    from agent.state import RunState

    state = RunState.start("run-1", start_messages())
    await run_agent(state, one_call(name, args), box, sink, LoopSettings(**settings), AllowAll())
    return state.calls[(0, 0)]


def body(record) -> dict:
    return json.loads(record.result.split("\n", 1)[1])


@pytest.mark.parametrize("answer", ["accept", "decline"])
async def test_the_link_reaches_the_user_and_the_call_gets_their_answer(hosted, answer):
    box, _, era = hosted
    sink = ListSink(link_answer=answer)
    record = await run(box, sink, "hosted__connect_account", {"service": "files"})
    assert record.status == "succeeded", record.result
    assert body(record) == {"action": answer}
    [link] = sink.links
    assert (link.server, link.url, link.elicitation_id, link.wait) == ("hosted", LINK, "el-4f2a", True)
    assert link.message == "Connect your files account to continue."
    assert (link.call_id, link.tool, link.round_index) == ("c1", "hosted__connect_account", 0)


class SlowUser(ListSink):
    async def ask_link(self, request, timeout):
        self.links.append(request)
        await asyncio.sleep(2.0)  # the person takes longer than the tool's idle timeout
        return "accept"


async def test_the_clock_stops_while_the_user_is_asked(hosted):
    box, _, era = hosted
    record = await run(box, SlowUser(), "hosted__connect_account", {}, tool_timeout=1.0)
    assert record.status == "succeeded", record.result
    assert body(record) == {"action": "accept"}


async def test_a_link_that_is_not_http_is_declined_without_asking(hosted):
    box, _, era = hosted
    sink = ListSink(link_answer="accept")
    record = await run(box, sink, "hosted__connect_account", {"link": "javascript:alert(1)"})
    assert body(record) == {"action": "decline"}
    assert sink.links == []


@pytest.mark.parametrize("hosted", ["legacy", "auto"], indirect=True)
async def test_url_elicitation_required_shows_the_link_and_tells_the_model(hosted):
    box, runs, _ = hosted
    sink = ListSink(link_answer="accept")
    record = await run(box, sink, "hosted__needs_login", {})
    assert record.status == "failed" and record.error_code == "execution_error"
    assert "accounts.example.com" in record.result and "call the tool again" in record.result
    [link] = sink.links
    assert (link.url, link.wait, link.message) == (LINK, False, "Sign in to Example Co.")
    assert runs.read_text().splitlines() == ["needs_login"]  # not retried behind the user's back


async def test_a_host_that_cannot_show_links_declines_them(hosted):
    box, _, era = hosted

    class NoLinks:
        def __init__(self):
            self.events = []

        async def emit(self, event):
            self.events.append(event)

        async def is_cancelled(self):
            return False

    record = await run(box, NoLinks(), "hosted__connect_account", {})
    assert body(record) == {"action": "decline"}


async def test_a_hosted_http_server_asks_on_the_calls_sse_stream(tmp_path):
    """A hand-written 2025-11-25 Streamable HTTP server sends elicitation/create on the SSE response of
    the tools/call POST; the client answers with a POST and the call completes. The link is never
    fetched by the client."""
    import subprocess

    import httpx
    from mcp_helpers import free_port, wait_for_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "servers" / "legacy_http_server.py"), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pool = McpPool()  # auto: server/discover is refused, so the 2025-11-25 handshake
    try:
        wait_for_port(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        box = McpToolbox(pool, [McpServerConfig(name="legacy", transport="http", url=url)])
        sink = ListSink(link_answer="accept")
        record = await run(box, sink, "legacy__connect_account", {})
        async with httpx.AsyncClient() as http:
            stats = (await http.get(f"http://127.0.0.1:{port}/admin/stats")).json()
    finally:
        await pool.aclose()
        proc.terminate()
        proc.wait(10)
    assert record.status == "succeeded", record.result
    assert body(record) == {"action": "accept"}
    [link] = sink.links
    assert link.url.startswith(f"http://127.0.0.1:{port}/connect?flow=elicit-")
    assert stats["ran"] == {"connect_account": 1} and stats["visits"] == 0


async def test_on_a_shared_2025_session_a_link_with_two_calls_in_flight_is_shown_to_nobody(hosted):
    """Two calls at once on one session: an elicitation/create cannot say whose it is, so it is
    cancelled rather than shown to the wrong person (the pool's sessions are shared by runs)."""
    from agent.loop import AllowAll, run_agent
    from agent.state import RunState

    box, _, _ = hosted

    def respond(request):
        if tool_results(request):
            return reply(text="done")
        return reply(
            calls=[
                call("c1", "hosted__connect_account", {"service": "files"}),
                call("c2", "hosted__connect_account", {"service": "mail"}),
            ]
        )

    sink = ListSink(link_answer="accept")
    state = RunState.start("run-1", start_messages())
    await run_agent(state, ScriptedProvider(respond), box, sink, LoopSettings(), AllowAll())
    answers = [body(state.calls[(0, i)]) for i in (0, 1)]
    assert answers == [{"action": "cancel"}, {"action": "cancel"}]
    assert sink.links == []


async def test_a_link_never_goes_to_the_call_that_happened_to_open_the_session(tmp_path):
    """The session is opened from inside a first call (as after a restart or a re-opened session);
    a link asked during a later call must go to that later call's user, not the first one's."""
    from agent.mcp.elicitation import current_call  # noqa: F401  (the routing under test)

    pool = McpPool(mode="legacy")
    pool.configure(McpServerConfig(name="hosted", command=sys.executable, args=(SERVER,)))
    asked: dict[str, list] = {"first": [], "second": []}

    def asker(who):
        async def ask(request):
            asked[who].append(request)
            return "accept"

        return ask

    try:
        # No listing first: this call starts the session itself.
        await pool.call_tool("hosted", "index", {"steps": 1, "delay": 0}, ask_link=asker("first"))
        result = await pool.call_tool("hosted", "connect_account", {}, ask_link=asker("second"))
    finally:
        await pool.aclose()
    assert json.loads(result.content[0].text) == {"action": "accept"}
    assert asked["first"] == [] and [r.url for r in asked["second"]] == [LINK]


async def test_a_server_asking_for_link_after_link_in_one_call_is_declined_after_the_third():
    from mcp.types import ElicitRequestURLParams

    from agent.deadline import Deadline
    from agent.mcp.elicitation import MAX_LINKS_PER_CALL, CallHooks, ask_user

    shown = []

    async def ask(request):
        shown.append(request.url)
        return "accept"

    hooks = CallHooks(ask, Deadline(5.0))
    answers = []
    async with hooks.deadline.running():
        for n in range(MAX_LINKS_PER_CALL + 2):
            params = ElicitRequestURLParams(
                mode="url", message="again", url=f"https://a.example/{n}", elicitation_id=str(n)
            )
            answers.append(await ask_user("spammy", hooks, params, wait=True))
    assert answers == ["accept"] * MAX_LINKS_PER_CALL + ["decline", "decline"]
    assert len(shown) == MAX_LINKS_PER_CALL
