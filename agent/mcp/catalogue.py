"""A server's tools as the host keeps them: namespaced, hashed, schema-checked (R-MCP-2, R-MCP-3).

Every tool reaches the model as ``<server>__<tool>`` (000 §10.3 does it for clashes; doing it always
keeps names stable when a server is added). Model APIs accept ``[A-Za-z0-9_-]{1,64}`` while MCP
allows ``.`` and 128 characters, so other characters become ``_`` and long names are shortened with
a hash suffix; the entry keeps the way back to the remote name.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError

SEPARATOR = "__"
MAX_NAME = 64
_BAD_CHARS = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    server: str
    remote_name: str
    exposed_name: str
    description: str
    input_schema: dict[str, Any]
    definition_hash: str
    title: str | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    output_schema: dict[str, Any] | None = None
    disabled_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Catalogue:
    server: str
    entries: tuple[CatalogueEntry, ...]
    generation: int  # bumps every time the list is refetched after a change

    def by_remote(self, name: str) -> CatalogueEntry | None:
        return next((e for e in self.entries if e.remote_name == name), None)

    def by_exposed(self, name: str) -> CatalogueEntry | None:
        return next((e for e in self.entries if e.exposed_name == name), None)


def definition_hash(name: str, description: str, schema: Any) -> str:
    """sha256 over name, description and input schema: an approval binds to exactly this definition."""
    blob = json.dumps([name, description, schema], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def exposed_name(server: str, tool: str) -> str:
    name = f"{server}{SEPARATOR}{_BAD_CHARS.sub('_', tool)}"
    if len(name) <= MAX_NAME and name == f"{server}{SEPARATOR}{tool}":
        return name
    # Changed or shortened: a hash of the real name keeps two different tools from colliding.
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` cannot be offered to a model as function parameters, or None if it can."""
    if not isinstance(schema, dict):
        return "inputSchema is not a JSON object"
    if schema.get("type") != "object":
        return f"inputSchema must have type 'object', not {schema.get('type')!r}"
    try:
        jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator).check_schema(
            schema
        )
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "(root)"
        return f"inputSchema is not a valid JSON Schema at {where}: {exc.message}"
    return None


def model_parameters(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema as function parameters: ``$schema`` dropped (several model APIs reject it)."""
    return {k: v for k, v in schema.items() if k != "$schema"}


def build_catalogue(server: str, tools: list[Any], generation: int) -> Catalogue:
    """Entries for the SDK ``Tool`` objects of one server, in the server's order."""
    entries: list[CatalogueEntry] = []
    taken: set[str] = set()
    for tool in tools:
        schema = tool.input_schema
        description = tool.description or tool.title or ""
        name = exposed_name(server, tool.name)
        if name in taken:  # two remote names that sanitise alike
            name = f"{name[: MAX_NAME - 9]}_{hashlib.sha256(tool.name.encode()).hexdigest()[:8]}"
        taken.add(name)
        annotations = (
            tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
        )
        entries.append(
            CatalogueEntry(
                server=server,
                remote_name=tool.name,
                exposed_name=name,
                description=description,
                input_schema=schema if isinstance(schema, dict) else {},
                definition_hash=definition_hash(tool.name, description, schema),
                title=tool.title,
                annotations=annotations,
                output_schema=tool.output_schema,
                disabled_reason=schema_problem(schema),
            )
        )
    return Catalogue(server=server, entries=tuple(entries), generation=generation)
