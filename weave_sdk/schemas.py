"""JSON Schemas derived from pydantic models, with exact numbers.

pydantic describes a ``Decimal`` as "a number or a numeric string" (its JSON mode writes
strings); Weave documents carry numbers exactly, so here ``Decimal`` is ``{"type":
"number"}`` and ``int`` stays ``{"type": "integer"}``. Float literals pydantic puts in a
schema (defaults, bounds) become the ``Decimal`` of their shortest repr, since a
definition refuses floats.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pydantic
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema


class _ExactNumbers(GenerateJsonSchema):
    """pydantic's generator, with ``Decimal`` as a plain JSON number."""

    def decimal_schema(self, schema: core_schema.DecimalSchema) -> JsonSchemaValue:
        out: dict[str, Any] = {"type": "number"}
        for key, name in (("ge", "minimum"), ("le", "maximum"), ("gt", "exclusiveMinimum"),
                          ("lt", "exclusiveMaximum"), ("multiple_of", "multipleOf")):
            value = schema.get(key)
            if value is not None:
                out[name] = value
        return out


def _exact(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, dict):
        return {k: _exact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_exact(v) for v in value]
    return value


def model_schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """The JSON Schema (2020-12) of ``model``'s validation, numbers exact."""
    schema: dict[str, Any] = _exact(model.model_json_schema(schema_generator=_ExactNumbers))
    return schema


__all__ = ["model_schema"]
