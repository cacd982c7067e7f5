"""R-LOOP-5 (errors as tool messages), R-LOOP-6 (guards), R-LOOP-7 (anchors), R-LOOP-8 (specs as given)."""

import asyncio
import json

from loop_doubles import FuncToolbox, ScriptedProvider, call, drive, info, reply, returning, rounds_so_far

from agent.events import RoundFinished, ToolCallChanged
from agent.loop import LoopSettings
from agent.messages import ToolSpec
from agent.toolbox import ToolInfo, ToolOutcome


def calls_then_text(*batches, final="answer"):
    def respond(req):
        n = rounds_so_far(req)
        if "Tools are switched off" in (req.messages[-1].content or ""):
            return reply("final: " + final)
        return reply(calls=batches[n]) if n < len(batches) else reply(final)

    return ScriptedProvider(respond)


async def test_r_loop_5_tool_exception_becomes_execution_error():
    async def boom(_):
        raise RuntimeError("database is locked")

    provider = calls_then_text([call("c1", "t", {})])
    _, state, _ = await drive(provider, FuncToolbox({"t": (info("t"), boom)}))
    body = json.loads(state.call(0, 0).result)
    assert body == {
        "success": False,
        "error": "RuntimeError: database is locked",
        "code": "execution_error",
        "hint": body["hint"],
    }
    assert state.call(0, 0).status == "failed" and state.call(0, 0).is_error


async def test_r_loop_5_timeout():
    async def hangs(_):
        await asyncio.Event().wait()

    provider = calls_then_text([call("c1", "t", {})])
    _, state, _ = await drive(
        provider, FuncToolbox({"t": (info("t"), hangs)}), settings=LoopSettings(tool_timeout=0.05)
    )
    assert state.call(0, 0).error_code == "timeout"


async def test_r_loop_5_rate_limited_tool_waits_and_retries_within_a_bound():
    answers = [ToolOutcome.failure("rate_limited", "slow down", retry_after=0), ToolOutcome.success("fine")]

    async def limited(_):
        return answers.pop(0)

    toolbox = FuncToolbox({"t": (info("t"), limited)})
    _, state, sink = await drive(calls_then_text([call("c1", "t", {})]), toolbox)
    assert state.call(0, 0).status == "succeeded" and state.call(0, 0).attempts == 2
    assert len(toolbox.executed) == 2
    # Each try is a "running" of its own, so the timeline can draw the retried try apart.
    changes = [(e.status, e.attempts) for e in sink.events if isinstance(e, ToolCallChanged)]
    assert changes[-3:] == [("running", 1), ("running", 2), ("succeeded", 2)]

    async def always(_):
        return ToolOutcome.failure("rate_limited", "slow down", retry_after=0)

    toolbox = FuncToolbox({"t": (info("t"), always)})
    _, state, _ = await drive(
        calls_then_text([call("c1", "t", {})]), toolbox, settings=LoopSettings(rate_limit_retries=2)
    )
    assert state.call(0, 0).error_code == "rate_limited" and len(toolbox.executed) == 3


async def test_r_loop_5_same_execution_error_twice_tells_model_to_answer():
    async def broken(_):
        return ToolOutcome.failure("execution_error", "service unavailable")

    provider = calls_then_text(
        [call("c1", "t", {"q": 1})], [call("c2", "t", {"q": 2})], [call("c3", "t", {"q": 3})]
    )
    toolbox = FuncToolbox({"t": (info("t", {"q": {"type": "integer"}}), broken)})
    step, state, sink = await drive(provider, toolbox)
    assert "twice" in json.loads(state.call(1, 0).result)["hint"]
    assert [r.kind for r in sink.of_type(RoundFinished)] == ["normal", "normal", "final"]
    assert provider.requests[-1].tool_choice == "none" and step.text.startswith("final:")
    assert len(toolbox.executed) == 2


async def test_r_loop_6_same_tool_at_most_three_times_then_final_round():
    batches = [[call(f"c{i}", "geo", {"radius": 100 - i})] for i in range(6)]
    provider = calls_then_text(*batches)
    toolbox = FuncToolbox({"geo": (info("geo", {"radius": {"type": "integer"}}), returning("x"))})
    step, state, sink = await drive(provider, toolbox)
    assert len(toolbox.executed) == 3
    assert state.call(3, 0).error_code == "limit_reached"
    assert [r.kind for r in sink.of_type(RoundFinished)][-1] == "final"
    final_request = provider.requests[-1]
    assert final_request.tool_choice == "none" and "Answer" in final_request.messages[-1].content
    assert step.text.startswith("final:")


async def test_r_loop_6_identical_call_is_not_executed_again():
    provider = calls_then_text([call("c1", "read", {"p": "a"})], [call("c2", "read", {"p": "a"})])
    toolbox = FuncToolbox({"read": (info("read", {"p": {"type": "string"}}), returning("content"))})
    _, state, _ = await drive(provider, toolbox)
    assert len(toolbox.executed) == 1
    body = json.loads(state.call(1, 0).result)
    assert body["code"] == "duplicate_call" and "already have the result" in body["hint"]


async def test_r_loop_6_final_round_without_tools_when_provider_lacks_tool_choice_none():
    provider = calls_then_text(*[[call(f"c{i}", "t", {"i": i})] for i in range(5)])
    toolbox = FuncToolbox({"t": (info("t", {"i": {"type": "integer"}}), returning("x"))})
    settings = LoopSettings(max_iterations=2, tool_choice_none_supported=False)
    step, _, sink = await drive(provider, toolbox, settings=settings)
    final = provider.requests[-1]
    assert final.tools == () and final.tool_choice is None and final.parallel_tool_calls is None
    assert [r.kind for r in sink.of_type(RoundFinished)] == ["normal", "normal", "final"]
    assert step.text.startswith("final:")


async def test_r_loop_7_result_anchor_on_by_default_and_configurable():
    for anchors in (True, False):
        provider = calls_then_text([call("c1", "get_environment_status", {})])
        toolbox = FuncToolbox(
            {"get_environment_status": (info("get_environment_status"), returning({"aq": "good"}))}
        )
        await drive(provider, toolbox, settings=LoopSettings(result_anchors=anchors))
        content = provider.requests[1].messages[-1].content
        if anchors:
            head, body = content.split("\n", 1)
            assert "get_environment_status" in head and "raw output follows" in head
            assert json.loads(body) == {"aq": "good"}
        else:
            assert json.loads(content) == {"aq": "good"}


async def test_r_loop_8_tool_spec_is_sent_exactly_as_the_toolbox_gives_it():
    override = ToolSpec(
        "get_environment_status",
        "Use when the user asks about weather or air in an area.",
        {"type": "object", "properties": {"area_code": {"type": "string"}}},
    )
    toolbox = FuncToolbox({"get_environment_status": (ToolInfo(spec=override), returning("x"))})
    provider = ScriptedProvider(lambda req: reply("ok"))
    await drive(provider, toolbox)
    assert provider.requests[0].tools == (override,)


async def test_r_loop_8_disabled_tools_are_not_offered():
    broken = ToolInfo(spec=ToolSpec("bad", "b"), disabled_reason="schema invalid")
    provider = ScriptedProvider(lambda req: reply("ok"))
    await drive(provider, FuncToolbox({"bad": (broken, returning("x"))}))
    assert provider.requests[0].tools == ()
