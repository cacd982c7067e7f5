"""CallToolResult -> something the model can read, size-capped (R-MCP-4, 000 §10.6).

* ``structuredContent`` wins when present and fits: the model gets the JSON value itself.
* Otherwise the content blocks become text: text as is; a single text block holding JSON is parsed,
  so it is serialised once and not as an escaped string (004 §10.1); images and audio become a short
  note with MIME type and size ("[image: image/png, 12 KB]") and travel beside the text as
  ``MediaPart``s (up to ``MAX_MEDIA_BYTES`` per result): the request builder of a provider whose
  capabilities accept that type inside a tool result sends the bytes, every other one only the note;
  embedded text resources are inlined, blobs and resource links become notes.
* Over ``max_chars`` the head and the tail are kept and the cut is stated in the text.
* ``isError`` becomes a failure with code ``execution_error`` and the server's message.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Literal

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from agent.messages import MediaPart, dumps_tool_result
from agent.toolbox import ToolOutcome

DEFAULT_MAX_CHARS = 16_000
MAX_ERROR_CHARS = 4_000
# Decoded bytes of images/audio passed on per result (Anthropic takes images up to 5 MB each).
MAX_MEDIA_BYTES = 4 * 1024 * 1024


def _size(b64: str) -> str:
    try:
        n = len(base64.b64decode(b64, validate=False))
    except (binascii.Error, ValueError):
        n = len(b64) * 3 // 4
    return f"{n / 1024:.1f} KB" if n >= 1024 else f"{n} bytes"


def media_part(block: Any) -> MediaPart | None:
    """An image or audio block as a ``MediaPart``, or None if it is not one or its data is not base64."""
    if not isinstance(block, ImageContent | AudioContent):
        return None
    try:
        base64.b64decode(block.data, validate=True)
    except (binascii.Error, ValueError):
        return None
    kind: Literal["image", "audio"] = "image" if isinstance(block, ImageContent) else "audio"
    return MediaPart(kind=kind, mime_type=block.mime_type, data=block.data)


def block_text(block: Any) -> str:
    """One content block as text for the model."""
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent | AudioContent):
        part = media_part(block)
        if part is None:
            kind = "image" if isinstance(block, ImageContent) else "audio"
            return f"[{kind}: {block.mime_type}; its data is not valid base64, dropped]"
        return part.note()
    if isinstance(block, ResourceLink):
        mime = f", {block.mime_type}" if block.mime_type else ""
        return f"[resource link: {block.name} <{block.uri}>{mime}]"
    if isinstance(block, EmbeddedResource):
        res = block.resource
        if isinstance(res, TextResourceContents):
            return f"[resource {res.uri}]\n{res.text}"
        if isinstance(res, BlobResourceContents):
            mime = res.mime_type or "application/octet-stream"
            return f"[resource {res.uri}: {mime}, {_size(res.blob)}; binary, not shown]"
    kind = getattr(block, "type", type(block).__name__)
    return f"[{kind} content not shown]"


def cap_text(text: str, max_chars: int) -> tuple[str, bool]:
    """Keep head (2/3) and tail (1/3) of an over-long text, saying what was cut."""
    if len(text) <= max_chars:
        return text, False
    note = f"\n…[cut {{n}} of {len(text)} characters from the middle of this result]…\n"
    budget = max(0, max_chars - len(note) - 8)
    head, tail = budget * 2 // 3, budget - budget * 2 // 3
    cut = len(text) - head - tail
    return text[:head] + note.format(n=cut) + (text[-tail:] if tail else ""), True


def _maybe_json(text: str) -> Any:
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        try:
            return json.loads(stripped)
        except ValueError:
            return text
    return text


def content_for_model(result: CallToolResult, max_chars: int = DEFAULT_MAX_CHARS) -> tuple[Any, bool]:
    """(value for the tool message, truncated?) for a successful result."""
    structured = result.structured_content
    if structured is not None:
        if len(dumps_tool_result(structured)) <= max_chars:
            return structured, False
        return cap_text(dumps_tool_result(structured), max_chars)
    blocks = list(result.content or ())
    if len(blocks) == 1 and isinstance(blocks[0], TextContent):
        value = _maybe_json(blocks[0].text)
        if not isinstance(value, str) and len(dumps_tool_result(value)) <= max_chars:
            return value, False
    text = "\n".join(block_text(b) for b in blocks)
    return cap_text(text, max_chars)


def media_of(result: CallToolResult, budget: int = MAX_MEDIA_BYTES) -> tuple[MediaPart, ...]:
    """The result's images and audio, in order, as long as they fit in ``budget`` decoded bytes."""
    parts: list[MediaPart] = []
    for block in result.content or ():
        part = media_part(block)
        if part is not None and part.size <= budget:
            parts.append(part)
            budget -= part.size
    return tuple(parts)


def map_call_result(result: CallToolResult, max_chars: int = DEFAULT_MAX_CHARS) -> ToolOutcome:
    if result.is_error:
        message = "\n".join(block_text(b) for b in result.content or ()) or "the tool reported an error"
        return ToolOutcome.failure("execution_error", cap_text(message, MAX_ERROR_CHARS)[0])
    value, truncated = content_for_model(result, max_chars)
    return ToolOutcome.success(value, truncated=truncated, media=media_of(result))
