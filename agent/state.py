"""RunState: everything the loop needs to take the next step of a run, as plain values.

The resumption contract (R-RUN-2)
---------------------------------
The loop never keeps anything it needs in local variables across steps: it reads ``RunState``, acts,
emits durable events, and folds each durable event into the state with ``RunState.apply`` right after
the sink has persisted it. So the state of a run is fully determined by

    the initial messages (the conversation so far, ending with the user's message)
    + the durable events emitted for this run, in order
    + the approval decisions recorded since (``record_decision``)

The host therefore has two ways to give a run back to the loop:

1. Replay: ``RunState.rebuild(run_key, initial_messages, stored_events, decisions=...)``. The stored
   events are the ``RoundFinished``, ``ToolCallChanged``, ``ApprovalRequested``,
   ``ContextCompressed``, ``RunFinished`` and ``RunFailed`` events the sink persisted (ephemeral
   deltas are ignored by ``apply``). Rows rebuilt into these events work just as well: a round row
   is a ``RoundFinished``, each tool call row is its latest ``ToolCallChanged``.
2. Snapshot: ``RunState.to_dict()`` gives plain JSON; ``RunState.from_dict`` reads it back.

Given such a state, stopped after any durable event, ``run_agent`` continues the run:
- a round whose ``RoundFinished`` is stored is never requested again;
- a tool call in a terminal status (invalid, denied, succeeded, failed, unknown) is never run again;
- a call left ``running`` is run again only when its tool is read-only or idempotent; otherwise it
  becomes ``unknown`` and the model receives an ``outcome_unknown`` tool error (never repeated);
- a call ``awaiting_approval`` stays so until ``record_decision`` gives a decision for its call id.

Values here carry no database ids: records are identified by (round_index, index) and call ids.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from agent.events import (
    ApprovalRequested,
    ContextCompressed,
    Event,
    RoundFinished,
    RunFailed,
    RunFinished,
    ToolCallChanged,
)
from agent.messages import Message
from agent.providers.types import (
    AssembledResponse,
    AssembledToolCall,
    ChoiceResult,
    Usage,
)
from agent.replay import blocks_from_dicts
from agent.statuses import EXECUTED_CALL_STATUSES, TERMINAL_CALL_STATUSES, ToolCallStatus

TERMINAL_STATUSES = TERMINAL_CALL_STATUSES
# Statuses of a call whose tool body was (or may have been) entered: they count towards guards.
EXECUTED_STATUSES = EXECUTED_CALL_STATUSES


@dataclass(slots=True)
class RoundRecord:
    round_index: int
    kind: str  # normal | continuation | final
    response: AssembledResponse
    request: dict[str, Any] = field(default_factory=dict)
    provider: str = ""
    model: str = ""

    @property
    def choice(self) -> ChoiceResult:
        # Only choices[0] is ever acted on (R-MSG-3); the rest live in the trace.
        return self.response.primary


@dataclass(slots=True)
class ToolCallRecord:
    round_index: int
    index: int
    call_id: str
    name: str
    arguments: str
    status: ToolCallStatus = "proposed"
    server: str | None = None
    risk: str | None = None
    result: str | None = None
    is_error: bool = False
    error_code: str | None = None
    truncated: bool = False
    attempts: int = 0
    media: tuple[dict[str, str], ...] = ()

    @property
    def key(self) -> tuple[int, int]:
        return (self.round_index, self.index)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    call_id: str
    approved: bool
    reason: str | None = None
    decided_by: str | None = None  # a display name, never a database id


@dataclass(slots=True)
class RunOutcome:
    kind: str  # finished | failed
    text: str = ""
    partial: bool = False
    error_class: str | None = None
    message: str | None = None
    code: str | None = None


@dataclass(slots=True)
class RunState:
    run_key: str
    messages: tuple[Message, ...]
    rounds: list[RoundRecord] = field(default_factory=list)
    calls: dict[tuple[int, int], ToolCallRecord] = field(default_factory=dict)
    decisions: dict[str, ApprovalDecision] = field(default_factory=dict)
    approval_requests: list[tuple[str, ...]] = field(default_factory=list)
    compressions: list[ContextCompressed] = field(default_factory=list)
    outcome: RunOutcome | None = None
    # None = every tool the toolbox offers; otherwise this conversation's allowed names (R-LOOP-4).
    allowed_tools: tuple[str, ...] | None = None

    # ----- construction -------------------------------------------------------------------------
    @classmethod
    def start(
        cls,
        run_key: str,
        messages: list[Message] | tuple[Message, ...],
        *,
        allowed_tools: tuple[str, ...] | None = None,
    ) -> RunState:
        return cls(run_key=run_key, messages=tuple(messages), allowed_tools=allowed_tools)

    @classmethod
    def rebuild(
        cls,
        run_key: str,
        messages: list[Message] | tuple[Message, ...],
        events: list[Event] | tuple[Event, ...],
        *,
        decisions: list[ApprovalDecision] | tuple[ApprovalDecision, ...] = (),
        allowed_tools: tuple[str, ...] | None = None,
    ) -> RunState:
        state = cls.start(run_key, messages, allowed_tools=allowed_tools)
        for event in events:
            state.apply(event)
        for decision in decisions:
            state.record_decision(decision)
        return state

    # ----- folding events -----------------------------------------------------------------------
    def apply(self, event: Event) -> None:
        """Fold one durable event into the state; ephemeral events are ignored."""
        if isinstance(event, RoundFinished):
            self._apply_round(event)
        elif isinstance(event, ToolCallChanged):
            self._apply_call(event)
        elif isinstance(event, ApprovalRequested):
            self.approval_requests.append(tuple(event.call_ids))
        elif isinstance(event, ContextCompressed):
            self.compressions.append(event)
        elif isinstance(event, RunFinished):
            self.outcome = RunOutcome(kind="finished", text=event.text, partial=event.partial)
        elif isinstance(event, RunFailed):
            self.outcome = RunOutcome(
                kind="failed", error_class=event.error_class, message=event.message, code=event.code
            )

    def _apply_round(self, event: RoundFinished) -> None:
        record = RoundRecord(
            round_index=event.round_index,
            kind=event.kind,
            response=event.response,
            request=event.request,
            provider=event.provider,
            model=event.model,
        )
        # Replaying the same event twice is harmless: a round is identified by its index.
        self.rounds = [r for r in self.rounds if r.round_index != event.round_index]
        self.rounds.append(record)
        self.rounds.sort(key=lambda r: r.round_index)

    def _apply_call(self, event: ToolCallChanged) -> None:
        key = (event.round_index, event.index)
        old = self.calls.get(key)
        record = ToolCallRecord(
            round_index=event.round_index,
            index=event.index,
            call_id=event.call_id,
            name=event.name,
            arguments=event.arguments,
            status=event.status,
            server=event.server if event.server is not None else (old.server if old else None),
            risk=event.risk if event.risk is not None else (old.risk if old else None),
            result=event.result,
            is_error=event.is_error,
            error_code=event.error_code,
            truncated=event.truncated,
            attempts=max(event.attempts, old.attempts if old else 0),
            media=tuple(event.media or ()),
        )
        self.calls[key] = record

    def record_decision(self, decision: ApprovalDecision) -> None:
        """Give the loop an admin's decision for a call waiting for approval (then call run_agent)."""
        self.decisions[decision.call_id] = decision

    # ----- queries ------------------------------------------------------------------------------
    @property
    def last_round(self) -> RoundRecord | None:
        return self.rounds[-1] if self.rounds else None

    def calls_of_round(self, round_index: int) -> list[ToolCallRecord]:
        return sorted((c for c in self.calls.values() if c.round_index == round_index), key=lambda c: c.index)

    def call(self, round_index: int, index: int) -> ToolCallRecord | None:
        return self.calls.get((round_index, index))

    def executed_count(self, name: str) -> int:
        return sum(1 for c in self.calls.values() if c.name == name and c.status in EXECUTED_STATUSES)

    def model_rounds(self) -> int:
        """Rounds that count towards max iterations: continuations extend a round, they are not one."""
        return sum(1 for r in self.rounds if r.kind != "continuation")

    # ----- plain JSON ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "run_key": self.run_key,
            "messages": [m.to_dict() for m in self.messages],
            "allowed_tools": list(self.allowed_tools) if self.allowed_tools is not None else None,
            "rounds": [_round_to_dict(r) for r in self.rounds],
            "calls": [asdict(c) for c in sorted(self.calls.values(), key=lambda c: c.key)],
            "decisions": [asdict(d) for d in self.decisions.values()],
            "approval_requests": [list(r) for r in self.approval_requests],
            "compressions": [asdict(c) for c in self.compressions],
            "outcome": asdict(self.outcome) if self.outcome else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunState:
        allowed = data.get("allowed_tools")
        state = cls(
            run_key=data["run_key"],
            messages=tuple(Message.from_dict(m) for m in data["messages"]),
            allowed_tools=tuple(allowed) if allowed is not None else None,
        )
        state.rounds = [_round_from_dict(r) for r in data.get("rounds", [])]
        for raw in data.get("calls", []):
            record = ToolCallRecord(**{**raw, "media": tuple(raw.get("media") or ())})
            state.calls[record.key] = record
        for raw in data.get("decisions", []):
            state.record_decision(ApprovalDecision(**raw))
        state.approval_requests = [tuple(r) for r in data.get("approval_requests", [])]
        state.compressions = [ContextCompressed(**c) for c in data.get("compressions", [])]
        if data.get("outcome"):
            state.outcome = RunOutcome(**data["outcome"])
        return state

    def copy(self) -> RunState:
        return RunState.from_dict(self.to_dict())


def _round_to_dict(record: RoundRecord) -> dict[str, Any]:
    return {
        "round_index": record.round_index,
        "kind": record.kind,
        "response": record.response.to_dict(),
        "request": record.request,
        "provider": record.provider,
        "model": record.model,
    }


def _round_from_dict(data: dict[str, Any]) -> RoundRecord:
    return RoundRecord(
        round_index=data["round_index"],
        kind=data["kind"],
        response=response_from_dict(data["response"]),
        request=data.get("request") or {},
        provider=data.get("provider", ""),
        model=data.get("model", ""),
    )


_USAGE_FIELDS = frozenset(Usage.__dataclass_fields__)


def usage_from_dict(data: dict[str, Any] | None) -> Usage:
    """The inverse of ``Usage.to_dict``; keys a stored row has and ``Usage`` no longer has are dropped."""
    return Usage(**{k: v for k, v in (data or {}).items() if k in _USAGE_FIELDS})


_CALL_FIELDS = frozenset(AssembledToolCall.__dataclass_fields__)


def choice_from_dict(c: dict[str, Any]) -> ChoiceResult:
    """The inverse of ``ChoiceResult.to_dict``; rows stored before a field existed still load."""
    return ChoiceResult(
        index=c["index"],
        text=c.get("text") or "",
        reasoning=c.get("reasoning") or "",
        tool_calls=tuple(
            AssembledToolCall(**{k: v for k, v in t.items() if k in _CALL_FIELDS})
            for t in c.get("tool_calls") or ()
        ),
        finish_reason=c["finish_reason"],
        finish_reason_raw=c.get("finish_reason_raw"),
        refusal=c.get("refusal"),
        replay=blocks_from_dicts(c.get("replay")),
    )


def response_from_dict(data: dict[str, Any]) -> AssembledResponse:
    """The inverse of ``AssembledResponse.to_dict`` (the providers package only serialises)."""
    choices = tuple(choice_from_dict(c) for c in data.get("choices") or ())
    return AssembledResponse(
        choices=choices,
        usage=usage_from_dict(data.get("usage")),
        response_id=data.get("response_id"),
        model=data.get("model"),
    )
