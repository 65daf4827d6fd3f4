"""JSON Schema (Draft 2020-12) over exact values, importable by pure code (node kinds, core).

Weave's values are exact (``int`` and ``Decimal``, never float), so the type checker counts
a ``Decimal`` as a ``number`` and an integral one as an ``integer`` (as JSON Schema does for
``1.0``); ``bool`` is never a number. Bounds and ``multipleOf`` compare exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator
from jsonschema.validators import extend

from weave_core.foundation.exactjson import JSON, dumps, loads


def _is_number(_checker: Any, value: object) -> bool:
    return isinstance(value, int | Decimal) and not isinstance(value, bool)


def _is_integer(_checker: Any, value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value()


_TYPES = Draft202012Validator.TYPE_CHECKER.redefine_many(
    {"number": _is_number, "integer": _is_integer}
)
ExactValidator = extend(Draft202012Validator, type_checker=_TYPES)  # type: ignore[no-untyped-call]  # jsonschema types extend() loosely
"""Draft 2020-12 with exact number types."""


@lru_cache(maxsize=256)
def _validator(schema_text: str) -> Validator:
    # Keyed by canonical text: a schema equal in content reuses one validator (pure, shared).
    return ExactValidator(loads(schema_text))  # type: ignore[no-any-return]  # jsonschema's factory is untyped


def violations(schema: Mapping[str, Any], value: JSON) -> list[str]:
    """Messages of every way ``value`` breaks ``schema``, ordered by path (empty: it holds)."""
    errors = sorted(
        _validator(dumps(schema)).iter_errors(value),
        key=lambda e: [str(p) for p in e.absolute_path],
    )
    return [
        "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path) + ": "
        + e.message
        for e in errors
    ]


__all__ = ["ExactValidator", "violations"]
