"""R-LOOP-3 (finish_reason length) and R-LOOP-4 (validation before execution, policy, approvals)."""

import json

from loop_doubles import FuncToolbox, ScriptedProvider, call, drive, info, reply, returning, rounds_so_far

from agent.events import ApprovalRequested, RoundFinished, RunFinished
from agent.loop import LoopSettings, NextStepInterruption, PolicyDecision, RiskPolicy, run_agent
from agent.loop.history import CONTINUE_PROMPT, join_pieces
from agent.sink import ListSink
from agent.state import ApprovalDecision

GEO = {
    "lat": {"type": "number", "minimum": -90, "maximum": 90},
    "lng": {"type": "number", "minimum": -180, "maximum": 180},
}


async def test_r_loop_3_plain_text_is_continued_and_joined_without_duplication():
    pieces = ["The quick brown fox jumps over", "fox jumps over the lazy dog, twice", " and then rests."]

    def respond(req):
        n = sum(m.role == "assistant" for m in req.messages)  # continuations add user messages
        return reply(pieces[n], finish="length" if n < 2 else "stop")

    provider = ScriptedProvider(respond)
    step, _, sink = await drive(provider, FuncToolbox({}))
    assert step.text == "The quick brown fox jumps over the lazy dog, twice and then rests."
    assert not step.partial
    last = provider.requests[-1].messages
    assert [m.role for m in last[-4:]] == ["assistant", "user", "assistant", "user"]
    assert last[-1].content == CONTINUE_PROMPT
    assert [r.kind for r in sink.of_type(RoundFinished)] == ["normal", "continuation", "continuation"]


async def test_r_loop_3_at_most_three_continuations_then_partial():
    provider = ScriptedProvider(lambda req: reply(f"part{len(req.messages)} ", finish="length"))
    step, _, sink = await drive(provider, FuncToolbox({}))
    assert len(provider.requests) == 4 and step.partial
    assert sink.of_type(RunFinished)[0].partial


def test_r_loop_3_join_keeps_short_genuine_repeats():
    assert join_pieces(["say the", " the end"]) == "say the the end"
    assert join_pieces(["abc 0123456789", "0123456789 def"]) == "abc 0123456789 def"


async def test_r_loop_3_truncated_tool_arguments_are_never_executed():
    def respond(req):
        if rounds_so_far(req) == 0:
            return reply(
                calls=[call("w1", "write_file", '{"path":"a.html","content":"<html>', truncated=True)],
                finish="length",
            )
        return reply("I will write it in pieces")

    toolbox = FuncToolbox(
        {
            "write_file": (
                info("write_file", {"path": {"type": "string"}, "content": {"type": "string"}}),
                returning("ok"),
            )
        }
    )
    provider = ScriptedProvider(respond)
    _, state, _ = await drive(provider, toolbox)
    assert toolbox.executed == []
    record = state.call(0, 0)
    assert record.status == "invalid" and "append_file" in json.loads(record.result)["hint"]
    # The broken arguments are not echoed back as invalid JSON in the history.
    assert provider.requests[1].messages[2].tool_calls[0].arguments == "{}"


def geo_toolbox():
    return FuncToolbox(
        {
            "simulate_geolocation": (
                info("simulate_geolocation", GEO, required=("lat", "lng")),
                returning({"ok": True}),
            )
        }
    )


def one_call_then_text(name, args):
    def respond(req):
        return reply(calls=[call("c1", name, args)]) if rounds_so_far(req) == 0 else reply("ok")

    return ScriptedProvider(respond)


async def test_r_loop_4_out_of_bounds_argument_rejected_with_hint_naming_field():
    toolbox = geo_toolbox()
    _, state, _ = await drive(one_call_then_text("simulate_geolocation", {"lat": 999, "lng": 999}), toolbox)
    assert toolbox.executed == []
    body = json.loads(state.call(0, 0).result)
    assert body["code"] == "invalid_arguments" and "lat: 999" in body["hint"] and "lng: 999" in body["hint"]


async def test_r_loop_4_missing_required_and_bad_json_and_unknown_tool():
    for args, code, needle in [
        ({"lat": 1}, "invalid_arguments", "lng"),
        ('{"lat": 1,', "invalid_arguments", "JSON"),
    ]:
        toolbox = geo_toolbox()
        _, state, _ = await drive(one_call_then_text("simulate_geolocation", args), toolbox)
        body = json.loads(state.call(0, 0).result)
        assert toolbox.executed == [] and body["code"] == code and needle in body["error"] + body["hint"]
    toolbox = geo_toolbox()
    _, state, _ = await drive(one_call_then_text("rm_rf", {}), toolbox)
    body = json.loads(state.call(0, 0).result)
    assert body["code"] == "unknown_tool" and "simulate_geolocation" in body["hint"]


async def test_r_loop_4_draft_07_schema_is_validated_too():
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"n": {"type": "integer", "exclusiveMaximum": 5}},
    }
    tool = info("count")
    tool = type(tool)(spec=type(tool.spec)("count", "c", schema))
    toolbox = FuncToolbox({"count": (tool, returning(1))})
    _, state, _ = await drive(one_call_then_text("count", {"n": 5}), toolbox)
    assert state.call(0, 0).error_code == "invalid_arguments" and toolbox.executed == []


async def test_r_loop_4_tool_outside_the_allowed_set_is_unknown():
    from loop_doubles import start_messages

    from agent.state import RunState

    state = RunState.start("r", start_messages(), allowed_tools=("other",))
    toolbox = geo_toolbox()
    _, state, _ = await drive(
        one_call_then_text("simulate_geolocation", {"lat": 1, "lng": 2}), toolbox, state=state
    )
    assert state.call(0, 0).error_code == "unknown_tool" and toolbox.executed == []


class DenyPolicy:
    async def check(self, call):
        return PolicyDecision("deny", "not on weekends")


async def test_r_loop_4_policy_deny_goes_back_as_tool_error():
    toolbox = geo_toolbox()
    _, state, _ = await drive(
        one_call_then_text("simulate_geolocation", {"lat": 1, "lng": 2}), toolbox, policy=DenyPolicy()
    )
    body = json.loads(state.call(0, 0).result)
    assert toolbox.executed == [] and body["code"] == "denied" and "weekends" in body["error"]


def send_toolbox():
    props = {"phone_number": {"type": "string"}, "content": {"type": "string"}}
    return FuncToolbox(
        {"send_message": (info("send_message", props, risk="high"), returning({"sent": True}))}
    )


async def test_r_loop_4_high_risk_call_interrupts_then_resumes_with_approval():
    toolbox = send_toolbox()
    provider = one_call_then_text("send_message", {"phone_number": "+1", "content": "hi"})
    step, state, sink = await drive(provider, toolbox, policy=RiskPolicy())
    assert isinstance(step, NextStepInterruption) and step.approvals[0].call_id == "c1"
    assert sink.of_type(ApprovalRequested)[0].call_ids == ("c1",) and toolbox.executed == []
    # Running again without a decision asks nothing new and runs nothing.
    again = await run_agent(state, provider, toolbox, ListSink(), LoopSettings(), RiskPolicy())
    assert isinstance(again, NextStepInterruption) and toolbox.executed == []
    state.record_decision(ApprovalDecision("c1", approved=True, decided_by="admin"))
    done = await run_agent(state, provider, toolbox, ListSink(), LoopSettings(), RiskPolicy())
    assert done.text == "ok" and len(toolbox.executed) == 1 and len(provider.requests) == 2


async def test_r_loop_4_denied_approval_becomes_a_denied_tool_error():
    toolbox = send_toolbox()
    provider = one_call_then_text("send_message", {"phone_number": "+1", "content": "hi"})
    _, state, _ = await drive(provider, toolbox, policy=RiskPolicy())
    state.record_decision(ApprovalDecision("c1", approved=False, reason="wrong number"))
    done = await run_agent(state, provider, toolbox, ListSink(), LoopSettings(), RiskPolicy())
    assert done.text == "ok" and toolbox.executed == []
    body = json.loads(state.call(0, 0).result)
    assert (
        state.call(0, 0).status == "denied" and body["code"] == "denied" and "wrong number" in body["error"]
    )
