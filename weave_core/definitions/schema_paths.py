"""Navigating a declared JSON Schema by a reference's path: the schema of ``$.a.b[0]``,
the JSON types a schema admits, and the types each use of a reference needs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from weave_core.plugins.nodespec import JsonSchema


def schema_types(schema: Mapping[str, Any]) -> set[str] | None:
    """The JSON types a schema allows, or ``None`` when it does not say."""
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {t for t in declared if isinstance(t, str)}
    values = schema["enum"] if isinstance(schema.get("enum"), list) else None
    if values is None and "const" in schema:
        values = [schema["const"]]
    if values is None:
        return None
    found = set()
    for value in values:
        if value is None:
            found.add("null")
        elif isinstance(value, bool):
            found.add("boolean")
        elif isinstance(value, int):
            found.add("integer")
        elif isinstance(value, str):
            found.add("string")
        elif isinstance(value, list):
            found.add("array")
        elif isinstance(value, Mapping):
            found.add("object")
        else:
            found.add("number")
    return found


def descend(schema: JsonSchema | None, path: Sequence[str | int]) -> tuple[JsonSchema | None, str]:
    """Follow ``path`` through a declared schema: (schema found or None for any, error or "").

    Rule: a field is refused when the object schema lists ``properties`` (or sets
    ``additionalProperties: false``) and does not list that field, unless
    ``additionalProperties`` is ``true`` or a schema. Reading into a declared scalar is
    refused. Anything the schema does not pin down (no type, combinators) is accepted.
    """
    for index, segment in enumerate(path):
        if not isinstance(schema, Mapping):
            return None, ""  # no schema, or a boolean schema: any value
        types = schema_types(schema)
        where = ".".join(str(p) for p in path[:index]) or "the value"
        if isinstance(segment, int) and types is not None and "array" in types:
            prefix = schema.get("prefixItems")
            if isinstance(prefix, list) and segment < len(prefix):
                schema = prefix[segment]
            else:
                items = schema.get("items")
                schema = items if isinstance(items, Mapping) else None
            continue
        if types is not None and "object" not in types:
            return None, f"{where} is declared {'/'.join(sorted(types))}, so it has no {segment!r}"
        key = str(segment)
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        if isinstance(properties, Mapping) and key in properties:
            schema = properties[key]
        elif isinstance(extra, Mapping):
            schema = extra
        elif extra is True:
            schema = None
        elif isinstance(properties, Mapping) or extra is False:
            return None, f"{where} declares no field {key!r}"
        else:
            schema = None
    return (schema if isinstance(schema, Mapping) else None), ""


NEEDED_TYPES: dict[str, tuple[set[str], str]] = {
    "number": ({"number", "integer"}, "a number"),
    "string": ({"string"}, "a string"),
    "comparable": ({"number", "integer", "string"}, "a number or a string"),
}


__all__ = ["NEEDED_TYPES", "descend", "schema_types"]
