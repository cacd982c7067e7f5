"""``[[demo:call TOOL {json arguments}]]``: make exactly that tool call, then say what came back.

The switch lets a test or a person drive any tool (built-in or MCP, by its namespaced name) with any
arguments through the real loop, the way a prompt-injected model would. The name and arguments are
sent verbatim: the tool need not be on offer (the host must refuse it then), and the arguments are not
fitted to the schema (the host must validate them). Several switches in one message become parallel
calls in one round. Once the round's results are back the model answers with one sentence per call;
it never calls again, whatever the results say.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from demo.model.history import SeenCall, Turn
from demo.model.plan import Plan, PlannedToolCall
from demo.model.text import say

_OPENING = re.compile(r"\[\[demo:call\s+([^\s\]]+)\s*")
_DECODER = json.JSONDecoder()
SUMMARY_CHARS = 200


@dataclass(frozen=True, slots=True)
class CallSwitch:
    name: str
    arguments: dict[str, Any] | str  # a str: the text after the name was not a JSON object; sent as is


def parse_switches(text: str) -> list[CallSwitch]:
    """Every well-formed ``[[demo:call NAME {...}]]`` in ``text``, in order.

    The arguments are read with a JSON decoder rather than a regular expression, so ``]]`` inside a
    JSON string does not end the switch. Without arguments (``[[demo:call NAME]]``) they are ``{}``.
    """
    found: list[CallSwitch] = []
    for opening in _OPENING.finditer(text):
        rest = text[opening.end() :]
        if rest.startswith("]]"):
            found.append(CallSwitch(opening.group(1), {}))
            continue
        try:
            value, used = _DECODER.raw_decode(rest)
        except json.JSONDecodeError:
            raw, _, _ = rest.partition("]]")
            found.append(CallSwitch(opening.group(1), raw.strip()))
            continue
        if rest[used:].lstrip().startswith("]]"):
            arguments = value if isinstance(value, dict) else json.dumps(value)
            found.append(CallSwitch(opening.group(1), arguments))
    return found


def call_switch(turn: Turn) -> Plan | None:
    switches = parse_switches(turn.user_text)
    if not switches:
        return None
    if not turn.rounds:
        planned = tuple(PlannedToolCall(s.name, s.arguments) for s in switches)
        return Plan(tool_calls=planned, finish_reason="tool_calls")
    seen = turn.rounds[0]
    english = " ".join(_sentence(c) for c in seen) or "The call was not made."
    chinese = " ".join(_sentence_zh(c) for c in seen) or "没有进行调用。"
    return say(turn, chinese, english)


def summarise(value: Any) -> str:
    """A short, single-line rendering of a tool result (or its error)."""
    if isinstance(value, dict) and value.get("success") is False and "error" in value:
        value = value["error"]
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS] + "…"


def _sentence(call: SeenCall) -> str:
    if call.result is None:
        return f"I called {call.name}, but no result came back."
    verdict = "it returned" if call.ok else "it failed"
    return f"I called {call.name} and {verdict}: {summarise(call.result)}."


def _sentence_zh(call: SeenCall) -> str:
    if call.result is None:
        return f"我调用了 {call.name}，但没有收到结果。"
    verdict = "返回" if call.ok else "失败"
    return f"我调用了 {call.name}，{verdict}：{summarise(call.result)}。"
