"""The history sent in each round, derived from RunState alone (R-MSG-1).

Because the transcript is a pure function of the stored rounds and tool call records, a resumed
run sends exactly what an uninterrupted one would have sent.
"""

from __future__ import annotations

import json

from agent.messages import MediaPart, Message, ToolCall
from agent.state import RoundRecord, RunState

CONTINUE_PROMPT = (
    "Your previous answer was cut off by the output limit. Continue exactly where it stopped, "
    "without repeating what you already wrote."
)
FINAL_PROMPT = (
    "{reason} Tools are switched off now. Answer the user's request with the information you already "
    "have, and say plainly what is missing."
)
GUARD_REASONS = {
    "max_iterations": "The maximum number of steps for this run has been reached.",
    "tool_limit": "A tool was called more often than this run allows.",
    "repeated_error": "A tool failed the same way twice in a row.",
}
MIN_OVERLAP = 8
MAX_OVERLAP = 400


def _history_arguments(raw: str) -> str:
    # Some servers (vLLM, Ollama) parse history arguments and reject invalid JSON with a 400; the model
    # already got the parse error in the tool message, so an empty object stands in for the broken text.
    try:
        json.loads(raw)
    except (json.JSONDecodeError, TypeError):
        return "{}"
    return raw


def _assistant_message(record: RoundRecord) -> Message:
    choice = record.choice
    calls: tuple[ToolCall, ...] = ()
    if choice.tool_calls and record.kind != "final":
        calls = tuple(
            ToolCall(c.id, c.name, _history_arguments(c.arguments_raw), c.provider_extra)
            for c in choice.tool_calls
        )
    # Reasoning and the opaque replay blocks stay with their message, byte for byte; whether and
    # where they are sent back is the adapter's business, decided by its capability profile.
    return Message(
        role="assistant",
        content=choice.text or None,
        tool_calls=calls,
        reasoning=choice.reasoning or None,
        replay=choice.replay,
    )


def transcript(state: RunState) -> list[Message]:
    """Initial messages + every stored round with its tool messages, in order."""
    messages = list(state.messages)
    rounds = state.rounds
    for pos, record in enumerate(rounds):
        messages.append(_assistant_message(record))
        if record.choice.tool_calls and record.kind != "final":
            for call in state.calls_of_round(record.round_index):
                content = call.result if call.result is not None else "{}"
                media = tuple(MediaPart.from_dict(m) for m in call.media)
                messages.append(Message.tool(call.call_id, content, is_error=call.is_error, media=media))
        nxt = rounds[pos + 1] if pos + 1 < len(rounds) else None
        if nxt is not None and nxt.kind == "continuation":
            messages.append(Message.user(CONTINUE_PROMPT))
    return messages


def request_messages(state: RunState, kind: str, guard: str | None) -> list[Message]:
    messages = transcript(state)
    if kind == "continuation":
        messages.append(Message.user(CONTINUE_PROMPT))
    elif kind == "final":
        reason = GUARD_REASONS.get(guard or "", "A limit of this run has been reached.")
        messages.append(Message.user(FINAL_PROMPT.format(reason=reason)))
    return messages


def continuation_chain(state: RunState) -> list[RoundRecord]:
    """The last round and the rounds it continues, oldest first."""
    chain: list[RoundRecord] = []
    for record in reversed(state.rounds):
        chain.append(record)
        if record.kind != "continuation":
            break
    return list(reversed(chain))


def join_pieces(pieces: list[str]) -> str:
    """Join continued text, removing an overlap the model repeated at the start of a piece.

    Only overlaps of at least MIN_OVERLAP characters are removed: a shorter match (a space, "the ")
    is as likely to be a genuine repetition as a duplicated one.
    """
    joined = ""
    for piece in pieces:
        overlap = 0
        for size in range(min(len(joined), len(piece), MAX_OVERLAP), MIN_OVERLAP - 1, -1):
            if joined.endswith(piece[:size]):
                overlap = size
                break
        joined += piece[overlap:]
    return joined
