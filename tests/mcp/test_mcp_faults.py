"""Misbehaving servers (tests/mcp/servers/raw_server.py) over real stdio subprocesses."""

import asyncio
import json
import time

import pytest
import pytest_asyncio
from mcp_helpers import child_pids, raw_config

from agent.mcp import McpPool, McpToolbox, ServerStartTimeoutError
from agent.toolbox import ToolContext

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.live]  # spawns MCP servers
CTX = ToolContext(run_key="r", timeout=30)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("raw")
    return {"cancel": d / "cancel.log", "side": d / "side.log"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def box(files):
    env = {"RAW_CANCEL_LOG": str(files["cancel"]), "RAW_SIDE_EFFECTS": str(files["side"])}
    pool = McpPool(backoff_base=0.2)
    configs = [
        raw_config("raw", env=env, call_timeout=0.5),
        raw_config("noisy", "noise"),
        raw_config("paged", "paged", "broken_schema"),
        raw_config("stuck", "init_hang", connect_timeout=1.0),
    ]
    yield McpToolbox(pool, configs, max_result_chars=2000)
    await pool.aclose()


async def test_hanging_initialize_times_out_alone(box):
    started = time.monotonic()
    tools = {t.spec.name for t in await box.list_tools()}
    assert time.monotonic() - started < 5
    assert "raw__echo" in tools and "noisy__echo" in tools
    assert not any(name.startswith("stuck__") for name in tools)
    assert "longer than 1 s" in box.errors["stuck"]
    with pytest.raises(ServerStartTimeoutError):
        await box.pool.catalogue("stuck", refresh=True)


async def test_non_protocol_stdout_is_skipped(box):
    out = await box.execute("noisy__echo", {"text": "still works"}, CTX)
    assert out.ok and out.content == "still works"


async def test_pagination_and_broken_schema_disabled_alone(box):
    catalogue = await box.pool.catalogue("paged")
    names = [e.remote_name for e in catalogue.entries]
    assert len(names) == 10 and names[0] == "echo" and names[-1] == "broken"
    broken = catalogue.by_remote("broken")
    assert broken.disabled_reason and "not a valid JSON Schema" in broken.disabled_reason
    assert all(e.disabled_reason is None for e in catalogue.entries if e.remote_name != "broken")
    infos = {t.spec.name: t for t in await box.list_tools()}
    assert infos["paged__broken"].disabled_reason
    out = await box.execute("paged__broken", {}, CTX)
    assert out.code == "unknown_tool"


async def test_is_error_and_invalid_params(box):
    out = await box.execute("raw__fail", {}, CTX)
    assert out.code == "execution_error" and "the backend said no" in out.error
    out = await box.execute("raw__bad_params", {}, CTX)
    assert out.code == "invalid_arguments"


async def test_huge_result_is_capped_head_and_tail(box):
    out = await box.execute("raw__huge", {}, CTX)
    assert out.ok and out.truncated
    assert len(out.content) <= 2000
    assert out.content.startswith("line 000000") and "line 003999" in out.content
    assert "cut" in out.content and "characters from the middle" in out.content


async def test_images_and_resources_become_notes(box):
    out = await box.execute("raw__image", {}, CTX)
    assert out.ok
    assert "[image: image/png" in out.content
    assert [m.mime_type for m in out.media] == ["image/png"]  # the bytes travel beside the text
    assert "resource text" in out.content and "[resource file:///b.bin: x/y" in out.content
    assert "iVBOR" not in out.content


async def lines_at_least(path, n):
    """Poll the server's log file until it has n lines (the server writes it asynchronously)."""
    for _ in range(500):
        if path.exists() and len(path.read_text().splitlines()) >= n:
            break
        await asyncio.sleep(0.01)
    return path.read_text().splitlines() if path.exists() else []


async def test_timeout_cancels_on_the_server(box, files):
    out = await box.execute("raw__hang", {}, CTX)
    assert out.code == "timeout"
    cancelled = [json.loads(x) for x in await lines_at_least(files["cancel"], 1)]
    assert cancelled and "requestId" in cancelled[-1]
    assert (await box.execute("raw__echo", {"text": "alive"}, CTX)).content == "alive"


async def test_caller_cancellation_reaches_the_server(box, files):
    # The suite spreads this module's tests over pytest-xdist processes (--dist loadgroup), so
    # the timeout test may have run elsewhere and the server may not have written its log yet.
    log = files["cancel"]
    before = len(log.read_text().splitlines()) if log.exists() else 0
    task = asyncio.create_task(box.pool.call_tool("raw", "hang", {}, timeout=30))
    # Cancel once the request is in flight: the session has an outstanding request id. Run alone,
    # this test's call is also the one that starts the server, so wait for the connection too.
    for _ in range(1000):
        conn = box.pool._conns.get("raw")
        session = conn and conn.client and conn.client.session
        if session and session._dispatcher._pending:
            break
        await asyncio.sleep(0.005)
    assert session and session._dispatcher._pending, "the call never reached the server"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(await lines_at_least(files["cancel"], before + 1)) == before + 1


async def test_crash_mid_call_then_restart_on_next_use(box, files):
    pids_before = child_pids()
    out = await box.execute("raw__crash", {}, CTX)
    assert out.code == "outcome_unknown" and "connection closed" in out.error
    again = await box.execute("raw__echo", {"text": "back"}, CTX)
    assert again.ok and again.content == "back"
    assert child_pids() != pids_before  # a new child replaced the crashed one


async def test_side_effect_then_crash_is_not_repeated(box, files):
    out = await box.execute("raw__side_effect", {}, CTX)
    assert out.code == "outcome_unknown" and "not repeated" in out.error
    assert files["side"].read_text() == "done\n"


async def test_list_changed_refreshes_catalogue(box):
    first = await box.pool.catalogue("raw")
    names_before = {e.remote_name for e in first.entries}
    changed = asyncio.Event()
    box.pool.add_listener(lambda server: changed.set() if server == "raw" else None)
    assert (await box.execute("raw__add_tool", {}, CTX)).ok
    await asyncio.wait_for(changed.wait(), 5)
    second = await box.pool.catalogue("raw")
    assert second.generation > first.generation
    assert {e.remote_name for e in second.entries} - names_before
