"""Shrinking the working context above the threshold (R-CTX-2, 004 §5.2, §10.4).

Each step is tried in order and only while the request is still above the threshold:

1. ``cap_tool_results``: tool results are cut to a smaller cap (head and tail kept, cut stated);
2. ``keep_last_result``: of consecutive calls of the same tool, only the last result is kept;
   earlier ones become a one-line stub (004 §10.4);
3. ``drop_oldest``: the oldest units (a user message, or an assistant message with its tool
   messages, kept together so tool_call_id pairing stays valid) are replaced by one note.

System and developer messages, the latest user message, the last round and the tool list are always
kept (004 §5.1). The stored history is never changed: this works on the view sent to the model.

Hysteresis, for the prompt cache: the loop compresses only above ``compress_threshold``, down to
``compress_target`` (``shrink(target=...)``), and records what it did as a ``CompressionPlan``: the
number of leading messages it compressed and the target. Later rounds re-apply the same plan to the
same leading messages (``apply``), which gives the same bytes, and append what came after unchanged;
so the compressed prefix stays cached until the context crosses the threshold again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agent.context.budget import ContextLimits
from agent.context.caps import cap_text
from agent.context.tokens import TokenCounter
from agent.messages import Message, ToolSpec

PRESSURE_RESULT_CAP = 2_000


@dataclass(frozen=True, slots=True)
class CompressionStep:
    step: str
    tokens_before: int
    tokens_after: int
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CompressionPlan:
    """What one compression did, so later rounds can reproduce it byte for byte."""

    prefix: int  # how many leading messages were compressed
    target: int  # the token target they were compressed to
    force: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"prefix": self.prefix, "target": self.target, "force": self.force}

    @classmethod
    def from_dict(cls, data: Any) -> CompressionPlan | None:
        if not isinstance(data, dict) or not isinstance(data.get("prefix"), int):
            return None
        return cls(int(data["prefix"]), int(data.get("target") or 0), bool(data.get("force")))


@dataclass(frozen=True, slots=True)
class Compressor:
    counter: TokenCounter
    limits: ContextLimits
    pressure_cap: int = PRESSURE_RESULT_CAP

    def target(self) -> int:
        return int(self.limits.compress_threshold * self.limits.context_window)

    def low_water(self) -> int:
        return int(self.limits.compress_target * self.limits.context_window)

    def shrink(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        force: bool = False,
        target: int | None = None,
    ) -> tuple[tuple[Message, ...], list[CompressionStep]]:
        """Apply the steps while above ``target`` (default: the threshold), or all of them when ``force``."""
        goal = self.target() if target is None else target
        current = tuple(messages)
        steps: list[CompressionStep] = []
        for name, fn in (
            ("cap_tool_results", self._cap_results),
            ("keep_last_result", _keep_last_result),
            ("drop_oldest", lambda m: self._drop(m, tools, goal)),
        ):
            before = self.counter.count_request(current, tools)
            if before <= goal and not force:
                break
            shrunk, detail = fn(current)
            if shrunk == current:
                continue
            after = self.counter.count_request(shrunk, tools)
            steps.append(CompressionStep(name, before, after, detail))
            current = shrunk
        return current, steps

    def apply(
        self, plan: CompressionPlan, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> tuple[Message, ...]:
        """Re-apply an earlier round's plan: same leading messages in, same bytes out."""
        head, _ = self.shrink(messages[: plan.prefix], tools, force=plan.force, target=plan.target)
        return (*head, *messages[plan.prefix :])

    def _drop(
        self, messages: tuple[Message, ...], tools: Sequence[ToolSpec], goal: int
    ) -> tuple[tuple[Message, ...], dict[str, Any]]:
        # The older half first; if that is not enough for the goal, everything that may go, in one step.
        shrunk, detail = _drop_oldest(messages)
        if self.counter.count_request(shrunk, tools) > goal:
            shrunk, detail = _drop_oldest(messages, share=1.0)
        return shrunk, detail

    def _cap_results(self, messages: tuple[Message, ...]) -> tuple[tuple[Message, ...], dict[str, Any]]:
        capped: list[str] = []
        out = []
        for m in messages:
            if m.role == "tool" and m.content:
                text, cut = cap_text(m.content, self.pressure_cap)
                if cut:
                    capped.append(m.tool_call_id or "")
                    m = replace(m, content=text)
            out.append(m)
        return tuple(out), {"capped_call_ids": capped, "cap_chars": self.pressure_cap}


def _tool_names(messages: Sequence[Message]) -> dict[str, str]:
    return {c.id: c.name for m in messages for c in m.tool_calls}


def _keep_last_result(messages: tuple[Message, ...]) -> tuple[tuple[Message, ...], dict[str, Any]]:
    names = _tool_names(messages)
    tool_positions = [i for i, m in enumerate(messages) if m.role == "tool"]
    superseded: dict[int, str] = {}
    for here, nxt in zip(tool_positions, tool_positions[1:], strict=False):
        name = names.get(messages[here].tool_call_id or "")
        if name and name == names.get(messages[nxt].tool_call_id or ""):
            superseded[here] = messages[nxt].tool_call_id or ""
    out = list(messages)
    for pos, later in superseded.items():
        note = f"[result superseded by the later call {later} of the same tool; only that one is kept]"
        out[pos] = replace(messages[pos], content=note, media=())  # its images go with it
    return tuple(out), {"superseded_call_ids": [messages[p].tool_call_id for p in superseded]}


def _units(messages: tuple[Message, ...]) -> list[list[int]]:
    """Group positions into droppable units: an assistant message with its tool messages."""
    units: list[list[int]] = []
    for i, m in enumerate(messages):
        if m.role == "tool" and units:
            units[-1].append(i)
        else:
            units.append([i])
    return units


def _drop_oldest(
    messages: tuple[Message, ...], share: float = 0.5
) -> tuple[tuple[Message, ...], dict[str, Any]]:
    latest_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    units = _units(messages)
    keep_last = units[-1] if units else []
    droppable = [
        u
        for u in units
        if messages[u[0]].role not in ("system", "developer") and latest_user not in u and u is not keep_last
    ]
    # Drop the older half of what may go: enough to matter, yet recent rounds survive.
    victims = droppable[: max(1, int(len(droppable) * share))] if droppable else []
    if not victims:
        return messages, {}
    dropped = {i for u in victims for i in u}
    tools_called = sorted({c.name for i in dropped for c in messages[i].tool_calls})
    note = Message.user(
        f"[Context note from clearloop: {len(dropped)} earlier messages were omitted to fit the context "
        f"window; tools called in them: {', '.join(tools_called) or 'none'}.]"
    )
    out: list[Message] = []
    for i, m in enumerate(messages):
        if i == min(dropped):
            out.append(note)
        if i not in dropped:
            out.append(m)
    return tuple(out), {"dropped_messages": len(dropped), "tools_called": tools_called}
