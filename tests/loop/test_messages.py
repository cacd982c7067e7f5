"""R-MSG-1..4: roles, complete history, stored rounds, choice 0 only, JSON-encoded results."""

import json

from loop_doubles import (
    FuncToolbox,
    ScriptedProvider,
    call,
    choice,
    drive,
    info,
    reply,
    returning,
    rounds_so_far,
)

from agent.events import RoundFinished, ToolCallChanged
from agent.loop import LoopSettings, RiskPolicy
from agent.toolbox import ToolOutcome


def two_round_provider():
    def respond(req):
        if rounds_so_far(req) == 0:
            return reply(calls=[call("c1", "read", {"path": "a"}), call("c2", "read", {"path": "b"})])
        return reply("done")

    return ScriptedProvider(respond)


async def test_r_msg_1_history_is_complete_and_tool_messages_pair_with_calls():
    provider = two_round_provider()
    toolbox = FuncToolbox({"read": (info("read", {"path": {"type": "string"}}), returning({"ok": 1}))})
    step, _, _ = await drive(provider, toolbox, text="read both")
    assert step.text == "done"
    first, second = provider.requests
    assert [m.role for m in first.messages] == ["system", "user"]
    # The second round carries the whole history, not only the latest message (000 §6.4, 004 §4.4).
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "tool", "tool"]
    assistant = second.messages[2]
    assert [m.tool_call_id for m in second.messages[3:]] == [c.id for c in assistant.tool_calls]


async def test_r_msg_2_every_round_is_stored_with_request_response_usage_and_timing():
    provider = two_round_provider()
    toolbox = FuncToolbox({"read": (info("read", {"path": {"type": "string"}}), returning("x"))})
    _, _, sink = await drive(provider, toolbox)
    rounds = sink.of_type(RoundFinished)
    assert [r.round_index for r in rounds] == [0, 1]
    for r in rounds:
        assert r.request["messages"] and r.request["tools"][0]["name"] == "read"
        assert r.usage.prompt_tokens == 100 and r.finish_reason_raw == r.finish_reason
        assert r.duration_ms >= 0 and r.provider == "scripted" and r.model == "scripted"
    assert rounds[0].finish_reason == "tool_calls" and rounds[1].response.text == "done"


async def test_r_msg_3_only_choice_zero_is_used_other_choices_never_executed():
    def respond(req):
        if rounds_so_far(req) == 0:
            other = choice(calls=(call("x9", "send_message", {"to": "+1"}),), index=1)
            return reply(calls=[call("c1", "lookup", {})], extra=(other,))
        return reply("answer")

    toolbox = FuncToolbox(
        {
            "lookup": (info("lookup"), returning("found")),
            "send_message": (
                info("send_message", {"to": {"type": "string"}}, risk="high"),
                returning("sent"),
            ),
        }
    )
    step, state, sink = await drive(ScriptedProvider(respond), toolbox, policy=RiskPolicy())
    assert step.text == "answer"
    assert toolbox.executed == [("lookup", {})]
    assert {e.name for e in sink.of_type(ToolCallChanged)} == {"lookup"}
    # The other choice is kept in the trace, untouched.
    stored = sink.of_type(RoundFinished)[0].response
    assert stored.choice_count == 2 and stored.choices[1].tool_calls[0].name == "send_message"


async def test_r_msg_4_results_are_json_encoded_not_concatenated():
    tricky = {"text": 'He said "hi" \\ then 你好', "n": [1, 2]}

    def respond(req):
        return reply(calls=[call("c1", "t", {})]) if rounds_so_far(req) == 0 else reply("ok")

    toolbox = FuncToolbox({"t": (info("t"), returning(tricky))})
    provider = ScriptedProvider(respond)
    await drive(provider, toolbox, settings=LoopSettings(result_anchors=False))
    content = provider.requests[1].messages[-1].content
    assert json.loads(content) == tricky
    assert "你好" in content  # ensure_ascii=False


async def test_r_msg_4_errors_are_json_with_success_false():
    def respond(req):
        return reply(calls=[call("c1", "t", {})]) if rounds_so_far(req) == 0 else reply("ok")

    async def fails(_):
        return ToolOutcome.failure("execution_error", 'disk "full"')

    provider = ScriptedProvider(respond)
    await drive(provider, FuncToolbox({"t": (info("t"), fails)}))
    body = json.loads(provider.requests[1].messages[-1].content)
    assert body["success"] is False and body["error"] == 'disk "full"' and body["code"] == "execution_error"
