"""Reading the request like a model would: the user's words, the tools on offer, results so far."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

TRIGGER = re.compile(r"\[\[demo:([a-z0-9-]+)\]\]")
# Messages a host adds on its own (continue / answer-now / context notes) are not the user's request.
HOST_NOTES = ("Continue exactly where it stopped", "Tools are switched off", "[Context note from")
CJK = re.compile(r"[\u3400-\u9fff]")


@dataclass(frozen=True, slots=True)
class SeenCall:
    name: str
    arguments: dict[str, Any]
    result: Any  # the parsed tool message (anchor line removed), or its raw text
    ok: bool


@dataclass(slots=True)
class Turn:
    user_text: str
    tools: dict[str, dict[str, Any]]  # name -> function spec
    rounds: list[list[SeenCall]] = field(default_factory=list)
    assistant_texts: list[str] = field(default_factory=list)
    host_note: str = ""  # the host's latest instruction after the user's message, if any
    tools_off: bool = False
    images: list[str] = field(default_factory=list)  # MIME types of image_url parts in the user's message
    attachments: list[str] = field(default_factory=list)  # files the host said the user attached
    # Every user message of the request, oldest first (host notes left out): what the model was sent.
    questions: list[str] = field(default_factory=list)

    @property
    def cjk(self) -> bool:
        return bool(CJK.search(self.user_text))

    @property
    def triggers(self) -> set[str]:
        return set(TRIGGER.findall(self.user_text))

    def tool(self, suffix: str) -> str | None:
        """The offered tool whose name ends with ``suffix`` (namespaced MCP names included)."""
        for name in self.tools:
            if name == suffix or name.endswith(suffix):
                return name
        return None

    def results(self, suffix: str) -> list[SeenCall]:
        return [c for r in self.rounds for c in r if c.name.endswith(suffix)]


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


ATTACHED = re.compile(r"\[The user attached \d+ files? to this message; [^:]*: (.+)\]")
ATTACHED_NAME = re.compile(r"(?:^|, )(.+?) \([\d,]+ bytes\)")


def _images(content: Any) -> list[str]:
    """The MIME types of Chat Completions image parts (``image_url`` with a data URL)."""
    if not isinstance(content, list):
        return []
    urls = [(p.get("image_url") or {}).get("url", "") for p in content if isinstance(p, dict)]
    return [u[5:].split(";", 1)[0] for u in urls if u.startswith("data:")]


def parse_result(content: str) -> tuple[Any, bool]:
    """A tool message as data; an anchor line ("[Tool ... follows.]") before the JSON is skipped."""
    body = content
    if body.startswith("[Tool ") and "\n" in body:
        body = body.split("\n", 1)[1]
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        return body, True
    ok = not (isinstance(value, dict) and value.get("success") is False)
    return value, ok


def _args(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def read_turn(body: dict[str, Any]) -> Turn:
    messages = body.get("messages") or []
    tools = {t["function"]["name"]: t["function"] for t in body.get("tools") or [] if "function" in t}
    start = 0
    for i, m in enumerate(messages):
        if m.get("role") == "user" and not any(n in _text(m.get("content")) for n in HOST_NOTES):
            start = i
    turn = Turn(user_text=_text(messages[start].get("content")) if messages else "", tools=tools)
    turn.images = _images(messages[start].get("content")) if messages else []
    # clearloop's note naming attached files is the host's, not the user's words: scenarios match
    # what the user wrote ("user" or "message" in the note must not start the SQL or SMS scenario).
    note = ATTACHED.search(turn.user_text)
    if note:
        turn.attachments = ATTACHED_NAME.findall(note.group(1))
        turn.user_text = (turn.user_text[: note.start()] + turn.user_text[note.end() :]).strip()
    turn.tools_off = not tools or body.get("tool_choice") == "none"
    said = [_text(m.get("content")) for m in messages[: start + 1] if m.get("role") == "user"]
    turn.questions = [ATTACHED.sub("", t).strip() for t in said if not any(n in t for n in HOST_NOTES)]
    _read_rounds(turn, messages[start + 1 :])
    return turn


def _read_rounds(turn: Turn, messages: list[dict[str, Any]]) -> None:
    results = {m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"}
    for m in messages:
        if m.get("role") == "user":
            turn.host_note = _text(m.get("content"))
        if m.get("role") != "assistant":
            continue
        turn.host_note = ""
        if m.get("content"):
            turn.assistant_texts.append(_text(m.get("content")))
        seen = []
        for call in m.get("tool_calls") or []:
            fn = call.get("function", {})
            answer = results.get(call.get("id"))
            value, ok = parse_result(_text(answer.get("content"))) if answer else (None, False)
            seen.append(SeenCall(fn.get("name", ""), _args(fn.get("arguments", "")), value, ok))
        if seen:
            turn.rounds.append(seen)
