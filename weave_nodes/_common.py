"""Shared pieces of the built-in kinds' config models and checks (not a public API)."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Protocol, runtime_checkable

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

from weave_core.definitions.expressions import is_ref
from weave_core.foundation.exactjson import JSON
from weave_core.plugins.nodespec import CheckContext, JsonSchema


class ConfigModel(BaseModel):
    """Base of every built-in config: unknown fields refused, strict types, immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _int_to_decimal(value: object) -> object:
    # Exact JSON gives ints for integral literals; both spellings are exact numbers.
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value)
    return value


Name = Annotated[
    str, StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")
]
"""A queue, handler or signal name."""
Version = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
]
"""A handler or parameter version string, e.g. ``"1"`` or ``"2.1"``."""
BlockName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")]
"""A parallel branch name: the key under which its output is read, so a reference segment."""
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]
ExactNumber = Annotated[Decimal, BeforeValidator(_int_to_decimal), Field(ge=0)]
"""A non-negative exact number (int or decimal literal; never a float)."""


class Handler(ConfigModel):
    """A named, versioned worker handler."""

    name: Name
    version: Version
    idempotent: bool = True
    """May the dispatch layer re-run it after an unknown outcome (lease lost)?"""


@runtime_checkable
class SchemaContext(Protocol):
    """The engine's check context also tells the declared schema of a referenced value."""

    def schema_of(self, template: JSON) -> JsonSchema | None: ...


def schema_of(ctx: CheckContext, template: JSON) -> JsonSchema | None:
    """Declared schema of a bare ``$ref`` template, when the context can tell (else any)."""
    if isinstance(ctx, SchemaContext):
        return ctx.schema_of(template)
    return None


def check_at_most(ctx: CheckContext, value: int, limit: str, path: str, what: str) -> None:
    """Report ``limit_exceeded`` when ``value`` is above the engine limit ``limit``."""
    maximum = ctx.limit(limit)
    if value > maximum:
        ctx.problem(path, "limit_exceeded", f"{what} is {value}; the limit {limit} is {maximum}")


def check_correlation_key(ctx: CheckContext, value: Any, path: str) -> None:
    """A correlation key is a non-empty literal string or a reference to a string."""
    if isinstance(value, str):
        if not value:
            ctx.problem(path, "invalid_field", "correlation_key must not be empty")
        return
    if not is_ref(value):
        ctx.problem(
            path, "invalid_field", "correlation_key must be a non-empty string or a {'$ref': ...}"
        )
        return
    ctx.check_template(value, path)
    declared = schema_of(ctx, value)
    if declared is not None and "type" in declared:
        types = declared["type"] if isinstance(declared["type"], list) else [declared["type"]]
        if "string" not in types:
            ctx.problem(
                path,
                "ref_type_mismatch",
                "correlation_key must be a string, but the reference is declared "
                f"{declared['type']}",
            )


__all__ = [
    "BlockName",
    "ConfigModel",
    "ExactNumber",
    "Handler",
    "Name",
    "NonNegativeInt",
    "PositiveInt",
    "SchemaContext",
    "Version",
    "check_at_most",
    "check_correlation_key",
    "schema_of",
]
