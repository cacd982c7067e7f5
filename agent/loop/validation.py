"""Checks a proposed call before anything runs (R-LOOP-4, 000 §12, 004 §8).

Order: arguments complete (not truncated) -> tool in this conversation's allowed set -> arguments
parse as a JSON object -> JSON Schema (draft 2020-12, draft-07 ... via ``validator_for``; bounds
such as ``lat <= 90`` included) -> duplicate call id -> identical call already made -> per-tool
limit. Only then does the policy hook see the call.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from jsonschema import exceptions as schema_errors
from jsonschema.validators import validator_for

from agent.loop.results import TRUNCATED_HINT
from agent.providers.types import AssembledToolCall
from agent.state import EXECUTED_STATUSES, RunState
from agent.toolbox import ToolInfo


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    arguments: dict[str, Any] | None = None
    code: str | None = None
    error: str | None = None
    hint: str | None = None
    guard: bool = False  # a guard refused the call: the next round is the final one

    @classmethod
    def invalid(cls, code: str, error: str, hint: str | None = None, *, guard: bool = False) -> Verdict:
        return cls(ok=False, code=code, error=error, hint=hint, guard=guard)


def canonical(name: str, arguments: dict[str, Any]) -> str:
    return name + ":" + json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@functools.lru_cache(maxsize=256)
def _validator(schema_text: str) -> Any:
    schema = json.loads(schema_text)
    cls = validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _describe(error: schema_errors.ValidationError) -> str:
    where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
    return f"{where}: {error.message}"


def schema_problem(schema: dict[str, Any], arguments: dict[str, Any]) -> tuple[str, str] | None:
    """Schema errors as (error, hint naming each bad field), or None when the arguments are valid."""
    try:
        validator = _validator(json.dumps(schema, sort_keys=True))
    except schema_errors.SchemaError as exc:
        return f"the tool's own schema is invalid: {exc.message}", "This tool cannot be used right now."
    errors = sorted(validator.iter_errors(arguments), key=lambda e: list(map(str, e.absolute_path)))
    if not errors:
        return None
    best = schema_errors.best_match(errors)
    problems = "; ".join(_describe(e) for e in errors[:5])
    hint = f"Fix these arguments and call the tool again: {problems}."
    if best is not None and best.validator == "additionalProperties":
        hint += " Only the properties in the tool's schema are accepted."
    return f"invalid arguments: {problems}", hint


def parse_arguments(call: AssembledToolCall) -> tuple[dict[str, Any] | None, str | None]:
    raw = call.arguments_raw.strip() or "{}"
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"arguments are not valid JSON: {exc.msg} at position {exc.pos}"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {type(value).__name__}"
    if _has_nul(value):
        # Tools take text; a NUL (U+0000) is never meant, and databases such as PostgreSQL refuse it.
        return None, "arguments contain a NUL character (U+0000); send the text without it"
    return value, None


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def validate_call(
    state: RunState,
    round_index: int,
    index: int,
    call: AssembledToolCall,
    tools: dict[str, ToolInfo],
    *,
    finish_reason: str,
    max_same_tool: int,
) -> Verdict:
    if call.truncated or finish_reason == "length":
        return Verdict.invalid("invalid_arguments", "arguments truncated by the output limit", TRUNCATED_HINT)
    info = tools.get(call.name)
    if info is None:
        offered = ", ".join(sorted(tools)) or "none"
        return Verdict.invalid(
            "unknown_tool", f"no tool named {call.name!r} is available", f"Use one of: {offered}."
        )
    arguments, parse_error = parse_arguments(call)
    if arguments is None:
        return Verdict.invalid(
            "invalid_arguments",
            parse_error or "bad arguments",
            "Send the arguments as one complete JSON object.",
        )
    problem = schema_problem(info.spec.parameters, arguments)
    if problem:
        return Verdict.invalid("invalid_arguments", problem[0], problem[1])
    return _guards(state, round_index, index, call, arguments, max_same_tool)


def _earlier(state: RunState, round_index: int, index: int) -> list[Any]:
    return [c for c in state.calls.values() if c.key < (round_index, index)]


def _guards(
    state: RunState,
    round_index: int,
    index: int,
    call: AssembledToolCall,
    arguments: dict[str, Any],
    limit: int,
) -> Verdict:
    earlier = _earlier(state, round_index, index)
    if any(c.call_id == call.id for c in earlier):
        return Verdict.invalid("invalid_arguments", f"call id {call.id!r} was already used in this run")
    key = canonical(call.name, arguments)
    for prior in earlier:
        if prior.status in EXECUTED_STATUSES | {"approved", "awaiting_approval"} and _same(prior, key):
            return Verdict.invalid(
                "duplicate_call",
                f"identical call already made in this run (call {prior.call_id})",
                "You already have the result of this exact call in the conversation; use it instead of "
                "calling again.",
            )
    committed = sum(
        1
        for c in earlier
        if c.name == call.name and c.status in EXECUTED_STATUSES | {"approved", "awaiting_approval"}
    )
    if committed >= limit:
        return Verdict.invalid(
            "limit_reached",
            f"{call.name} was already called {committed} times in this run (limit {limit})",
            "Do not call this tool again; answer with what you have.",
            guard=True,
        )
    return Verdict(ok=True, arguments=arguments)


def _same(prior: Any, key: str) -> bool:
    try:
        args = json.loads(prior.arguments or "{}")
    except json.JSONDecodeError:
        return False
    return isinstance(args, dict) and canonical(prior.name, args) == key
