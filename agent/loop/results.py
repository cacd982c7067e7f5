"""Tool messages: what the model reads back (R-LOOP-5, R-LOOP-7, R-MSG-4)."""

from __future__ import annotations

from typing import Any

from agent.context.caps import cap_text
from agent.messages import dumps_tool_result

HINTS = {
    "timeout": "The tool did not answer in time. Do not repeat the call blindly; answer with what you have "
    "or tell the user the tool is slow.",
    "execution_error": "The tool failed while running. Do not retry the same call blindly.",
    "rate_limited": "The tool is rate limited and retries ran out. Answer with what you have or try later.",
    "outcome_unknown": "The call was interrupted; it may or may not have taken effect. "
    "It will not be repeated. Tell the user the outcome is unknown.",
    "denied": "The call was not allowed. Do not try to get around the decision; tell the user.",
}
REPEATED_ERROR_HINT = (
    "This tool failed the same way twice in a row. Do not call it again; "
    "answer the user now with what you have."
)
TRUNCATED_HINT = (
    "The arguments were cut off by the output limit (finish_reason length) and were NOT executed. Send the "
    "content in smaller pieces: write the first part with write_file, then add the rest with append_file, "
    "one complete call per piece."
)


def error_content(code: str, error: str, hint: str | None = None, **extra: Any) -> str:
    body: dict[str, Any] = {"success": False, "error": error, "code": code}
    hint = hint if hint is not None else HINTS.get(code)
    if hint:
        body["hint"] = hint
    body.update(extra)
    return dumps_tool_result(body)


def anchor_line(name: str) -> str:
    # 004 §6.2: tells the model this is external ground truth, not its own earlier words.
    return f'[Tool "{name}" ran successfully. Its raw output follows.]\n'


def success_content(name: str, content: Any, *, anchors: bool, cap: int) -> tuple[str, bool]:
    """Serialise a successful result; returns the text and whether it was cut to ``cap``."""
    body = content if isinstance(content, str) else dumps_tool_result(content)
    body, cut = cap_text(body, cap)
    return (anchor_line(name) + body if anchors else body), cut


def strip_anchor(content: str) -> str:
    """The raw result without its anchor line (for readers of stored tool messages)."""
    if content.startswith('[Tool "') and "\n" in content:
        return content.split("\n", 1)[1]
    return content
