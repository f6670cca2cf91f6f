"""Render a field's JSON Schema as the short "allowed: ..." text of an error message."""

from __future__ import annotations

from typing import Any

_TYPE_NAMES = {
    "integer": "int",
    "number": "float",
    "string": "str",
    "boolean": "bool",
    "null": "None",
    "array": "list",
    "object": "dict",
}


def _bounds(schema: dict[str, Any]) -> str:
    parts = []
    for key, op in (
        ("minimum", ">="),
        ("exclusiveMinimum", ">"),
        ("maximum", "<="),
        ("exclusiveMaximum", "<"),
    ):
        if key in schema:
            parts.append(f"{op} {schema[key]}")
    return " and ".join(parts)


def describe(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> str:
    """A compact, human description of what ``schema`` accepts."""
    defs = defs or {}
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        target = defs.get(name, {})
        keys = ", ".join(target.get("properties", {}))
        return f"dict with keys among: {keys}" if keys else "dict"
    if "anyOf" in schema:
        return " or ".join(dict.fromkeys(describe(s, defs) for s in schema["anyOf"]))
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) for v in schema["enum"])
    if "const" in schema:
        return repr(schema["const"])
    kind = schema.get("type")
    if kind == "object" and "$import" in schema.get("properties", {}):
        return "a class or function"
    if kind is None:
        return str(schema.get("description", "any value"))
    if isinstance(kind, list):
        return " or ".join(_TYPE_NAMES.get(str(k), str(k)) for k in kind)
    name = _TYPE_NAMES.get(kind, kind)
    if kind in ("integer", "number"):
        bounds = _bounds(schema)
        return f"{name} {bounds}" if bounds else name
    if kind == "string" and "description" in schema:
        return str(schema["description"])
    if kind == "array" and "prefixItems" in schema and "description" in schema:
        # A fixed-form list (each position its own meaning) says itself what it holds.
        return str(schema["description"])
    if kind == "array" and "items" in schema:
        return f"list of ({describe(schema['items'], defs)})"
    if (
        kind == "object"
        and "additionalProperties" in schema
        and isinstance(schema["additionalProperties"], dict)
    ):
        return f"dict of str -> ({describe(schema['additionalProperties'], defs)})"
    return str(name)
