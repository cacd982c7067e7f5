"""Test doubles for the loop: a scripted Provider and small in-test Toolboxes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agent.messages import Message, ToolSpec
from agent.providers import types as pt
from agent.providers.errors import ProviderError
from agent.toolbox import ToolContext, ToolInfo, ToolOutcome


def call(
    call_id: str, name: str, args: dict[str, Any] | str, *, truncated: bool = False
) -> pt.AssembledToolCall:
    raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError:
        parsed = None
    return pt.AssembledToolCall(
        call_id, name, raw, parsed if isinstance(parsed, dict) else None, truncated=truncated
    )


def choice(
    text: str = "", calls: tuple[pt.AssembledToolCall, ...] = (), finish: str | None = None, index: int = 0
) -> pt.ChoiceResult:
    reason = finish or ("tool_calls" if calls else "stop")
    return pt.ChoiceResult(index, text, "", tuple(calls), reason, reason)  # type: ignore[arg-type]


def reply(
    text: str = "",
    calls: tuple[pt.AssembledToolCall, ...] | list[pt.AssembledToolCall] = (),
    finish: str | None = None,
    extra: tuple[pt.ChoiceResult, ...] = (),
    prompt_tokens: int | None = 100,
) -> pt.AssembledResponse:
    total = prompt_tokens + 10 if prompt_tokens is not None else None
    usage = pt.Usage(prompt_tokens=prompt_tokens, completion_tokens=10, total_tokens=total)
    return pt.AssembledResponse((choice(text, tuple(calls), finish), *extra), usage, "resp", "scripted")


Responder = Callable[[pt.ModelRequest], pt.AssembledResponse | ProviderError]


@dataclass
class ScriptedProvider:
    """Answers each request with ``responder(request)``: a function of the history, never of call order,
    so a resumed run gets the same answers as an uninterrupted one."""

    responder: Responder
    name: str = "scripted"
    model: str = "scripted-model"
    requests: list[pt.ModelRequest] = field(default_factory=list)

    async def stream(self, request: pt.ModelRequest) -> AsyncIterator[pt.ModelEvent]:
        self.requests.append(request)
        answer = self.responder(request)
        if isinstance(answer, ProviderError):
            raise answer
        for ch in answer.choices:
            if ch.text:
                yield pt.TextDelta(ch.text, ch.index)
            for i, c in enumerate(ch.tool_calls):
                yield pt.ToolCallDelta(ch.index, i, c.id, c.name, c.arguments_raw)
            yield pt.Finish(ch.finish_reason, ch.finish_reason_raw, ch.index)
        yield pt.UsageReport(answer.usage)
        yield pt.ResponseDone(answer)


def rounds_so_far(request: pt.ModelRequest) -> int:
    """How many assistant messages the history holds since the last user message."""
    count = 0
    for m in reversed(request.messages):
        if m.role == "user":
            break
        count += m.role == "assistant"
    return count


def tool_results(request: pt.ModelRequest) -> dict[str, Message]:
    return {m.tool_call_id or "": m for m in request.messages if m.role == "tool"}


def result_body(message: Message) -> Any:
    from agent.loop.results import strip_anchor

    return json.loads(strip_anchor(message.content or ""))


Handler = Callable[[dict[str, Any]], Awaitable[Any]]


def info(
    name: str, properties: dict[str, Any] | None = None, *, required: tuple[str, ...] = (), **kw: Any
) -> ToolInfo:
    schema: dict[str, Any] = {"type": "object", "properties": properties or {}, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return ToolInfo(spec=ToolSpec(name, f"{name} (test tool)", schema), **kw)


@dataclass
class FuncToolbox:
    """Tools as async functions; a handler's return value is the success content, a ToolOutcome is passed
    through, an exception becomes the loop's problem (it must turn it into execution_error)."""

    tools: dict[str, tuple[ToolInfo, Handler]]
    executed: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    async def list_tools(self) -> list[ToolInfo]:
        return [t for t, _ in self.tools.values()]

    async def execute(self, name: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        self.executed.append((name, arguments))
        value = await self.tools[name][1](arguments)
        return value if isinstance(value, ToolOutcome) else ToolOutcome.success(value)


def returning(value: Any) -> Handler:
    async def handler(_: dict[str, Any]) -> Any:
        return value

    return handler


def start_messages(text: str = "hi") -> list[Message]:
    return [Message.system("You are a test assistant."), Message.user(text)]


async def drive(
    provider: Any,
    toolbox: Any,
    *,
    settings: Any = None,
    policy: Any = None,
    state: Any = None,
    text: str = "hi",
) -> tuple[Any, Any, Any]:
    """Run the loop to its end; returns (step, state, sink)."""
    from agent.loop import AllowAll, LoopSettings, run_agent
    from agent.sink import ListSink
    from agent.state import RunState

    state = state or RunState.start("run-1", start_messages(text))
    sink = ListSink()
    step = await run_agent(state, provider, toolbox, sink, settings or LoopSettings(), policy or AllowAll())
    return step, state, sink
