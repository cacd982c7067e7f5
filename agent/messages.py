"""The neutral message model every adapter converts from (R-MSG-1).

Roles are those of 000 §3: system, developer, user, assistant (optionally with tool calls) and tool
(answering exactly one tool call id of the assistant message right before it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from agent.replay import ReplayBlock, blocks_from_dicts

Role = Literal["system", "developer", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call as the model proposed it. ``arguments`` is the raw JSON text, never re-serialised."""

    id: str
    name: str
    arguments: str
    # Fields of the provider's tool call to echo back verbatim (Gemini's ``extra_content``).
    provider_extra: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.provider_extra:
            data["provider_extra"] = self.provider_extra
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        return cls(
            id=data["id"],
            name=data["name"],
            arguments=data.get("arguments", ""),
            provider_extra=data.get("provider_extra") or None,
        )


@dataclass(frozen=True, slots=True)
class MediaPart:
    """An image or audio clip a tool returned (base64). Sent to models whose capabilities accept that
    MIME type inside a tool result; every other model reads only the text note (``note``)."""

    kind: Literal["image", "audio"]
    mime_type: str
    data: str  # base64, exactly as the tool sent it

    @property
    def size(self) -> int:
        return len(self.data) * 3 // 4 - self.data[-2:].count("=")

    def note(self) -> str:
        n = self.size
        size = f"{n / 1024:.0f} KB" if n >= 1024 else f"{n} bytes"
        return f"[{self.kind}: {self.mime_type}, {size}]"

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "mime_type": self.mime_type, "data": self.data}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MediaPart:
        return cls(kind=data["kind"], mime_type=data["mime_type"], data=data["data"])


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    # Anthropic's tool_result carries is_error; other APIs only see the JSON body.
    is_error: bool = False
    reasoning: str | None = None
    # What the provider requires back verbatim with this assistant turn (agent/replay.py).
    replay: tuple[ReplayBlock, ...] = ()
    # Tool messages: images/audio the tool returned (``content`` notes each of them). User messages:
    # images the user attached, sent to vision models (``Capabilities.user_image_media``).
    media: tuple[MediaPart, ...] = ()

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", content=text)

    @classmethod
    def assistant(cls, text: str | None, tool_calls: tuple[ToolCall, ...] = ()) -> Message:
        return cls(role="assistant", content=text, tool_calls=tuple(tool_calls))

    @classmethod
    def tool(
        cls, call_id: str, content: str, *, is_error: bool = False, media: tuple[MediaPart, ...] = ()
    ) -> Message:
        return cls(role="tool", content=content, tool_call_id=call_id, is_error=is_error, media=media)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.is_error:
            data["is_error"] = True
        if self.reasoning:
            data["reasoning"] = self.reasoning
        if self.replay:
            data["replay"] = [b.to_dict() for b in self.replay]
        if self.media:
            data["media"] = [m.to_dict() for m in self.media]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        return cls(
            role=data["role"],
            content=data.get("content"),
            tool_calls=tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or ()),
            tool_call_id=data.get("tool_call_id"),
            is_error=bool(data.get("is_error", False)),
            reasoning=data.get("reasoning"),
            replay=blocks_from_dicts(data.get("replay")),
            media=tuple(MediaPart.from_dict(m) for m in data.get("media") or ()),
        )


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model sees of a tool: only name, description and parameters (R-MCP-3)."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


def dumps_tool_result(value: Any) -> str:
    """Serialise a tool result for the model (R-MSG-4): a JSON encoder, never concatenation."""
    return json.dumps(value, ensure_ascii=False, default=str)
