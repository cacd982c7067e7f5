"""Gateway mode (R-MCP-6, 003 §4.2): servers reached through one ``mcp_call_tool`` tool.

The model sees a single tool whose description is a short guide to the gateway servers' tools (what
each does, its parameters), so a large tool set costs a few hundred tokens instead of every schema.
The arguments are validated against the real tool's schema before anything is sent, because the
loop could only validate them against the gateway tool's generic ``arguments: object``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema

from agent.mcp.catalogue import Catalogue, CatalogueEntry, definition_hash
from agent.messages import ToolSpec

GATEWAY_TOOL = "mcp_call_tool"
MAX_GUIDE_CHARS = 4_000


def _first_sentence(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    for stop in (". ", "。"):
        if stop in text:
            text = text.split(stop, 1)[0] + stop.strip()
            break
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _signature(entry: CatalogueEntry) -> str:
    props = entry.input_schema.get("properties") or {}
    required = set(entry.input_schema.get("required") or ())
    params = []
    for key, spec in props.items():
        kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
        params.append(f"{key}{'' if key in required else '?'}: {kind}")
    return f"{entry.remote_name}({', '.join(params)})"


def gateway_spec(catalogues: Mapping[str, Catalogue]) -> ToolSpec:
    """The ``mcp_call_tool`` spec for these servers, with a usage guide as its description."""
    lines = [
        "Call a tool on one of the MCP servers below (their tools are not listed separately). "
        "Pass server, the tool name exactly as listed, and arguments as an object matching the "
        "tool's parameters ('?' marks optional ones). The tool's result or error is returned as is.",
    ]
    for server, catalogue in catalogues.items():
        lines.append(f"Server '{server}':")
        for entry in catalogue.entries:
            if entry.disabled_reason:
                continue
            lines.append(f"- {_signature(entry)}: {_first_sentence(entry.description)}")
    guide = "\n".join(lines)
    if len(guide) > MAX_GUIDE_CHARS:
        guide = guide[: MAX_GUIDE_CHARS - 60] + "\n…(guide shortened; use the tool names as listed)"
    servers = sorted(catalogues)
    return ToolSpec(
        name=GATEWAY_TOOL,
        description=guide,
        parameters={
            "type": "object",
            "properties": {
                "server": {"type": "string", "enum": servers, "description": "MCP server name."},
                "tool": {"type": "string", "description": "Tool name on that server, as listed above."},
                "arguments": {
                    "type": "object",
                    "description": "The tool's arguments as a JSON object.",
                    "default": {},
                },
            },
            "required": ["server", "tool"],
            "additionalProperties": False,
        },
    )


def gateway_hash(spec: ToolSpec) -> str:
    return definition_hash(spec.name, spec.description, spec.parameters)


def check_arguments(entry: CatalogueEntry, arguments: Any) -> str | None:
    """Why ``arguments`` do not fit the real tool's input schema, or None if they do."""
    if not isinstance(arguments, dict):
        return "arguments must be a JSON object"
    validator_cls = jsonschema.validators.validator_for(
        entry.input_schema, default=jsonschema.Draft202012Validator
    )
    errors = sorted(validator_cls(entry.input_schema).iter_errors(arguments), key=lambda e: list(e.path))
    if not errors:
        return None
    shown = "; ".join(f"{'/'.join(str(p) for p in e.path) or '(arguments)'}: {e.message}" for e in errors[:5])
    return f"arguments do not match {entry.server}/{entry.remote_name}: {shown}"
