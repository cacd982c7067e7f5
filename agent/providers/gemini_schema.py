"""JSON Schema -> the subset Gemini's function declarations accept (the ``gemini`` preset).

Gemini reads tool parameters as its OpenAPI-3.0-style ``Schema`` and rejects the whole request on
the first keyword it does not know: "Invalid JSON payload received. Unknown name "additionalProperties"
at 'tools[0].function_declarations[0].parameters': Cannot find field." (reported for ``$schema``,
``additionalProperties``, ``propertyNames``, ``const``, ``exclusiveMinimum``; sources in
docs/providers.md). MCP servers send all of these, so the schema is rewritten, never the tool:

* ``const: x`` becomes ``enum: [x]``; ``type: [t, "null"]`` becomes ``type: t, nullable: true``;
  a type list of several types becomes ``anyOf``;
* ``exclusiveMinimum``/``exclusiveMaximum`` (numbers) become ``minimum``/``maximum``;
* every other keyword outside the accepted set is dropped (the model loses a constraint; the
  loop still validates arguments against the original schema before running a tool).
"""

from __future__ import annotations

from typing import Any

_KEEP = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "items",
        "properties",
        "required",
        "anyOf",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "minProperties",
        "maxProperties",
        "default",
        "example",
        "propertyOrdering",
    }
)


def sanitise(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: sanitise(sub) for name, sub in value.items()}
        elif key == "items":
            out[key] = sanitise(value)
        elif key in ("anyOf", "oneOf") and isinstance(value, list):
            out["anyOf"] = [sanitise(v) for v in value]
        elif key == "const":
            out["enum"] = [value]
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, int | float):
            out.setdefault("minimum" if key == "exclusiveMinimum" else "maximum", value)
        elif key in _KEEP:
            out[key] = value
    _fix_type(out)
    if "required" in out and isinstance(out.get("properties"), dict):
        # Gemini rejects a required name that is not a property.
        out["required"] = [n for n in out["required"] if n in out["properties"]]
    return out


def _fix_type(out: dict[str, Any]) -> None:
    kind = out.get("type")
    if not isinstance(kind, list):
        return
    kinds = [k for k in kind if k != "null"]
    if len(kinds) < len(kind):
        out["nullable"] = True
    if len(kinds) == 1:
        out["type"] = kinds[0]
    else:
        del out["type"]
        if kinds:
            out["anyOf"] = [{"type": k} for k in kinds]
