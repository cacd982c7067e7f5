"""The seeds' scenarios and the demo faults, end to end: loop -> openai_chat adapter -> HTTP -> demo model."""

import json
from pathlib import Path

import pytest
from demo_server import demo_provider
from loop_doubles import FuncToolbox, drive, info, returning

from agent.events import RoundFinished
from agent.loop import LoopSettings, NextStepInterruption, RiskPolicy, run_agent
from agent.loop.history import transcript
from agent.loop.results import strip_anchor
from agent.messages import Message, ToolSpec
from agent.sink import ListSink
from agent.state import ApprovalDecision, RunState
from agent.toolbox import ToolInfo

SEED = json.loads((Path(__file__).parent / "seed_000_6.json").read_text())
SEED_MESSAGES = SEED["request"]["messages"]
SEED_TOOLS = [
    ToolInfo(
        spec=ToolSpec(t["function"]["name"], t["function"]["description"], t["function"]["parameters"]),
        risk="low" if t["function"]["name"] == "write_file" else "read_only",
    )
    for t in SEED["request"]["tools"]
]


def seed_result(index):
    return json.loads(SEED_MESSAGES[index]["content"])


class SeedFiles:
    """The seed's read_file / search_files / write_file, answering with the seed's results."""

    def __init__(self):
        self.written = {}

    async def list_tools(self):
        return SEED_TOOLS

    async def execute(self, name, arguments, ctx):
        from agent.toolbox import ToolOutcome

        if name == "read_file":
            return ToolOutcome.success(seed_result(3))
        if name == "search_files":
            return ToolOutcome.success(seed_result(4))
        self.written[arguments["path"]] = arguments["content"]
        return ToolOutcome.success(
            {"success": True, "path": arguments["path"], "bytes_written": len(arguments["content"].encode())}
        )


def seed_start():
    return [Message.system(SEED_MESSAGES[0]["content"]), Message.user(SEED_MESSAGES[1]["content"])]


async def test_000_section_6_three_rounds_match_the_seed_structurally():
    files = SeedFiles()
    async with demo_provider() as provider:
        state = RunState.start("seed-6", seed_start())
        step = await run_agent(state, provider, files, ListSink(), LoopSettings(), RiskPolicy())
    assert step.text == SEED["final_response"]["choices"][0]["message"]["content"]
    # R-MSG-2: the adapter's own wire request is stored with each round.
    assert state.rounds[0].request["wire"]["body"]["tools"] and len(state.rounds) == 3
    ours = [m.to_dict() for m in transcript(state)]
    assert [m["role"] for m in ours] == [m["role"] for m in SEED_MESSAGES] + ["assistant"]
    # Tool call ids pair each tool message with the assistant message right before it.
    for pos, message in enumerate(SEED_MESSAGES):
        if message["role"] == "assistant":
            seed_calls = [
                (c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message["tool_calls"]
            ]
            our_calls = [(c["name"], json.loads(c["arguments"])) for c in ours[pos]["tool_calls"]]
            assert [n for n, _ in our_calls] == [n for n, _ in seed_calls]
            ids = [c["id"] for c in ours[pos]["tool_calls"]]
            answers = [m["tool_call_id"] for m in ours[pos + 1 : pos + 1 + len(ids)]]
            assert answers == ids
    # Round 1: the seed's exact arguments; round 2: the write built from the two reads.
    first_calls = [json.loads(c["arguments"]) for c in ours[2]["tool_calls"]]
    assert first_calls == [json.loads(c["function"]["arguments"]) for c in SEED_MESSAGES[2]["tool_calls"]]
    seed_write = json.loads(SEED_MESSAGES[5]["tool_calls"][0]["function"]["arguments"])
    assert files.written == {"report.md": seed_write["content"]}
    for pos in (3, 4):
        assert json.loads(strip_anchor(ours[pos]["content"])) == json.loads(SEED_MESSAGES[pos]["content"])


async def test_000_section_10_4_two_newest_users():
    rows = {
        "columns": ["id", "name", "created_at"],
        "rows": [[7, "Zoe", "2026-11-02"], [6, "Yan", "2026-11-01"]],
    }
    props = {"sql": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 1000}}
    toolbox = FuncToolbox(
        {"query_database": (info("query_database", props, required=("sql",)), returning(rows))}
    )
    async with demo_provider() as provider:
        step, _, _ = await drive(provider, toolbox, text="查询最近创建的两个用户。")
    assert toolbox.executed == [
        (
            "query_database",
            {"sql": "SELECT id, name, created_at FROM users ORDER BY created_at DESC LIMIT 2", "limit": 2},
        )
    ]
    assert "Zoe" in step.text and "Yan" in step.text


def env_geo_toolbox():
    geo = {
        "lat": {"type": "number", "minimum": -90, "maximum": 90},
        "lng": {"type": "number", "minimum": -180, "maximum": 180},
        "radius": {"type": "number"},
    }
    return FuncToolbox(
        {
            "env_query__get_environment_status": (
                info(
                    "env_query__get_environment_status",
                    {"area_code": {"type": "string"}},
                    required=("area_code",),
                ),
                returning({"status": "normal", "air_quality": "良好", "temperature": 22}),
            ),
            "geo__simulate_geolocation": (
                info("geo__simulate_geolocation", geo, required=("lat", "lng")),
                returning({"nearby": "large park within 500 m"}),
            ),
        }
    )


async def test_004_section_7_1_environment_and_geolocation_in_parallel():
    toolbox = env_geo_toolbox()
    async with demo_provider() as provider:
        step, state, _ = await drive(provider, toolbox, text="A1001 区域环境怎么样，适合户外跑步吗？")
    assert [c.name for c in state.calls_of_round(0)] == [
        "env_query__get_environment_status",
        "geo__simulate_geolocation",
    ]
    assert "良好" in step.text and "park" in step.text


async def test_send_message_waits_for_approval_over_http():
    props = {"phone_number": {"type": "string"}, "content": {"type": "string"}}
    toolbox = FuncToolbox(
        {"send_message": (info("send_message", props, risk="high"), returning({"ok": True}))}
    )
    async with demo_provider() as provider:
        step, state, _ = await drive(
            provider, toolbox, policy=RiskPolicy(), text='Send "hi" to +8613800000000'
        )
        assert isinstance(step, NextStepInterruption) and toolbox.executed == []
        state.record_decision(ApprovalDecision(step.approvals[0].call_id, approved=True))
        done = await run_agent(state, provider, toolbox, ListSink(), LoopSettings(), RiskPolicy())
    assert toolbox.executed == [("send_message", {"phone_number": "+8613800000000", "content": "hi"})]
    assert done.text == "The message was sent."


def file_tools():
    props = {"path": {"type": "string"}, "content": {"type": "string"}}
    return FuncToolbox(
        {
            "write_file": (
                info("write_file", props, required=("path", "content"), risk="low"),
                returning({"ok": 1}),
            ),
            "append_file": (
                info("append_file", props, required=("path", "content"), risk="low"),
                returning({"ok": 1}),
            ),
        }
    )


async def test_demo_truncate_args_is_never_executed_and_model_writes_in_pieces():
    toolbox = file_tools()
    async with demo_provider() as provider:
        step, state, _ = await drive(provider, toolbox, text="write a big file [[demo:truncate-args]]")
    assert state.call(0, 0).status == "invalid" and state.rounds[0].choice.finish_reason == "length"
    assert [n for n, _ in toolbox.executed] == ["write_file", "append_file"]
    assert "pieces" in step.text


@pytest.mark.parametrize("fault", ["429", "500"])
async def test_demo_wire_faults_are_retried_by_the_adapter(fault):
    from demo.model import DemoModelSettings

    # No stall is involved here: a generous idle timeout, so a busy machine cannot turn the retried
    # request's slow first byte into a stall (it did under parallel load, at 0.3 s).
    demo = DemoModelSettings(tokens_per_second=0)
    async with demo_provider(
        demo_settings=demo, idle_timeout=10, retry_initial_backoff=0, retry_max_backoff=0
    ) as provider:
        step, state, sink = await drive(provider, FuncToolbox({}), text=f"hello [[demo:{fault}]]")
    assert "demo model" in step.text and len(state.rounds) == 1
    # Each retry is told to the run (the timeline draws the failed attempt as its own segment).
    from agent.events import RoundRetried

    retried = [e for e in sink.events if isinstance(e, RoundRetried)]
    assert [(e.round_index, e.attempt) for e in retried] == [(0, 1)]
    assert retried[0].error_class in ("RateLimited", "TransientUpstream") and retried[0].wait_ms == 0


async def test_demo_stall_fails_the_run_once_instead_of_paying_for_retries():
    # A stall is never retried, by the adapter or by the loop's round retry: the provider may be
    # billing the silent generation (docs/providers.md, "Timeouts").
    from demo.model import DemoModelSettings

    demo = DemoModelSettings(tokens_per_second=0, stall_seconds=3)
    async with demo_provider(demo_settings=demo, idle_timeout=0.3, retry_initial_backoff=0,
                             retry_max_backoff=0) as provider:
        step, state, _ = await drive(provider, FuncToolbox({}), text="hello [[demo:stall]]")
    assert step.code == "stalled" and "idle timeout" in step.message and state.rounds == []


async def test_demo_malformed_stream_fails_the_run_cleanly_and_the_next_run_works():
    from agent.events import RunFailed

    async with demo_provider() as provider:
        step, state, sink = await drive(provider, FuncToolbox({}), text="hello [[demo:malformed]]")
        assert step.code == "malformed_stream" and sink.of_type(RunFailed) and state.rounds == []
        again, _, _ = await drive(provider, FuncToolbox({}), text="hello [[demo:malformed]]")
    assert "demo model" in again.text


async def test_demo_context_overflow_is_handled_by_the_loop():
    async with demo_provider() as provider:
        step, _, _ = await drive(provider, FuncToolbox({}), text="hello [[demo:context-overflow]]")
    assert "demo model" in step.text


async def test_demo_bad_json_then_fixed_call():
    toolbox = env_geo_toolbox()
    async with demo_provider() as provider:
        step, state, _ = await drive(provider, toolbox, text="[[demo:bad-json]]")
    assert state.call(0, 0).error_code == "invalid_arguments" and len(toolbox.executed) == 1
    assert step.text.startswith("After fixing")


async def test_demo_unknown_tool():
    async with demo_provider() as provider:
        step, state, _ = await drive(provider, env_geo_toolbox(), text="[[demo:unknown-tool]]")
    assert state.call(0, 0).error_code == "unknown_tool" and "does not exist" in step.text


async def test_demo_loop_trips_the_guard_and_final_round_answers():
    toolbox = env_geo_toolbox()
    async with demo_provider() as provider:
        step, _, sink = await drive(provider, toolbox, text="[[demo:loop]]")
    assert len(toolbox.executed) == 3
    assert [r.kind for r in sink.of_type(RoundFinished)][-1] == "final" and "stopped" in step.text


async def test_demo_length_text_is_continued_over_http():
    async with demo_provider() as provider:
        step, state, _ = await drive(provider, FuncToolbox({}), text="[[demo:length-text]]")
    assert [r.kind for r in state.rounds] == ["normal", "continuation"]
    assert step.text.count("in the middle of") == 1 and step.text.endswith("without duplication.")


async def test_demo_n2_other_choice_is_never_executed():
    props = {"phone_number": {"type": "string"}, "content": {"type": "string"}}
    toolbox = FuncToolbox(
        {"send_message": (info("send_message", props, required=("phone_number",)), returning(1))}
    )
    async with demo_provider() as provider:
        step, state, _ = await drive(provider, toolbox, text="[[demo:n2]]", settings=LoopSettings(n=2))
    assert step.text == "This is the answer of choice 0." and toolbox.executed == []
    assert state.rounds[0].response.choice_count == 2


async def test_demo_call_switch_runs_exactly_that_builtin_call_and_summarises(tmp_path):
    from agent.tools.files import WorkspaceToolbox

    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    text = 'Look: [[demo:call read_file {"path": "notes.txt", "offset": 2, "limit": 1}]]'
    async with demo_provider() as provider:
        step, state, _ = await drive(provider, WorkspaceToolbox(tmp_path), text=text)
    made = state.calls_of_round(0)
    assert [(c.name, json.loads(c.arguments)) for c in made] == [
        ("read_file", {"path": "notes.txt", "offset": 2, "limit": 1})]
    assert len(state.rounds) == 2 and step.text.startswith("I called read_file and it returned: {")
    assert "beta" in step.text and "alpha" not in step.text


async def test_demo_call_switch_with_a_namespaced_mcp_name_and_a_refused_call():
    toolbox = env_geo_toolbox()
    text = ('[[demo:call geo__simulate_geolocation {"lat": 1.5, "lng": 2.5}]] '
            '[[demo:call env_query__get_environment_status {"area_code": 7}]]')
    async with demo_provider() as provider:
        step, state, _ = await drive(provider, toolbox, text=text)
    # Exactly as asked: the schema-violating second call is refused by the host, never "fixed" by the model.
    assert toolbox.executed == [("geo__simulate_geolocation", {"lat": 1.5, "lng": 2.5})]
    assert state.call(0, 1).error_code == "invalid_arguments"
    assert step.text.startswith('I called geo__simulate_geolocation and it returned: {"nearby": "large park')
    assert "I called env_query__get_environment_status and it failed:" in step.text
