"""Misbehaviour on request: ``[[demo:NAME]]`` in the user's message (ARCHITECTURE "The demo model").

Wire faults (429, 500, stall, malformed, context-overflow, slow) are carried in ``Plan.faults`` and
acted on by app.py; the behaviours below shape what the model says.
"""

from __future__ import annotations

from typing import Any

from demo.model.history import Turn
from demo.model.plan import Plan, PlannedToolCall
from demo.model.scenarios import calls
from demo.model.text import say, split_tokens

WIRE_FAULTS = frozenset({"429", "500", "stall", "malformed", "context-overflow", "slow"})

BIG_PART_1 = "# Big report\n\n" + "".join(
    f"Line {i}: the first half of a long document.\n" for i in range(1, 6)
)
BIG_PART_2 = "".join(f"Line {i}: the second half, written with append_file.\n" for i in range(6, 11))
LONG_A = "This answer is long on purpose: the demo model stops it at its output limit, right in the middle of"
LONG_B = (
    "in the middle of a sentence, and the client asks it to continue; the pieces join without duplication."
)


def example_args(spec: dict[str, Any], variant: int = 0) -> dict[str, Any]:
    """Arguments that satisfy a simple schema: required fields with a plain value per type."""
    params = spec.get("parameters") or {}
    props: dict[str, Any] = params.get("properties") or {}
    out: dict[str, Any] = {}
    for key in params.get("required") or list(props)[:1]:
        kind = (props.get(key) or {}).get("type", "string")
        out[key] = {"integer": 1 + variant, "number": 1.0 + variant, "boolean": False}.get(
            kind, f"demo-{variant}"
        )
    return out


def truncate_args(turn: Turn) -> Plan | None:
    write = turn.tool("write_file")
    if not write:
        return None
    append = turn.tool("append_file")
    if not turn.rounds:
        broken = '{"path": "big.md", "content": "' + BIG_PART_1.replace("\n", "\\n")[:60]
        return Plan(tool_calls=(PlannedToolCall(write, broken),), finish_reason="length")
    if len(turn.rounds) == 1:
        return calls(turn, (write, {"path": "big.md", "content": BIG_PART_1}))
    if len(turn.rounds) == 2 and append:
        return calls(turn, (append, {"path": "big.md", "content": BIG_PART_2}))
    return say(turn, "已分块写入 big.md。", "big.md was written in smaller pieces.")


def bad_json(turn: Turn) -> Plan | None:
    if not turn.tools:
        return None
    name = next(iter(turn.tools))
    if not turn.rounds:
        return Plan(tool_calls=(PlannedToolCall(name, '{"oops": tru'),), finish_reason="tool_calls")
    if len(turn.rounds) == 1:
        return calls(turn, (name, example_args(turn.tools[name])))
    return say(turn, "修正参数后调用成功。", "After fixing the arguments the call went through.")


def unknown_tool(turn: Turn) -> Plan | None:
    if not turn.rounds:
        return Plan(tool_calls=(PlannedToolCall("delete_everything", {}),), finish_reason="tool_calls")
    return say(
        turn, "那个工具不存在，我不再调用它。", "That tool does not exist here, so I will not call it again."
    )


def loop_forever(turn: Turn) -> Plan | None:
    if not turn.tools or turn.tools_off:
        seen = sum(len(r) for r in turn.rounds)
        return say(
            turn, f"我调用了 {seen} 次工具后停下来回答。", f"I stopped after {seen} tool calls to answer."
        )
    name = next(iter(turn.tools))
    return calls(turn, (name, example_args(turn.tools[name], variant=len(turn.rounds))))


def length_text(turn: Turn) -> Plan | None:
    if not turn.assistant_texts:
        return Plan(text_pieces=split_tokens(LONG_A), finish_reason="length")
    return Plan(text_pieces=split_tokens(LONG_B), finish_reason="stop")


def n2(turn: Turn) -> Plan | None:
    other_tool = turn.tool("send_message") or next(iter(turn.tools), None)
    extra: tuple[Plan, ...] = ()
    if other_tool:
        extra = (
            Plan(
                tool_calls=(PlannedToolCall(other_tool, example_args(turn.tools[other_tool])),),
                finish_reason="tool_calls",
            ),
        )
    main = say(turn, "这是第 0 个选择的回答。", "This is the answer of choice 0.")
    return Plan(text_pieces=main.text_pieces, finish_reason="stop", extra_choices=extra)


def history_seen(turn: Turn) -> Plan | None:
    """Say which questions the request held, oldest first: the model's own view of the branch it got."""
    listed = " | ".join(q.replace("[[demo:history]]", "").strip() for q in turn.questions)
    return say(turn, f"我收到的问题：{listed}", f"The questions I was sent: {listed}")


BEHAVIOURS = {
    "truncate-args": truncate_args,
    "bad-json": bad_json,
    "unknown-tool": unknown_tool,
    "loop": loop_forever,
    "length-text": length_text,
    "n2": n2,
    "history": history_seen,
}
