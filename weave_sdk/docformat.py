"""The definition format's top-level rules, once, for the SDK and the engine alike.

``definition.schema.json`` (package data here, published as ``docs/definition.schema.json``)
is the JSON Schema of a schema_version 1 document. Both ``weave_sdk.validate`` and the
engine's ``weave_core.definitions`` check the top level with it (``jsonschema``, exact
number types) and report each violation with the problem code and message its
``x-weave-*`` annotations name, so the two cannot drift apart. What a limit allows is the
caller's (the engine's configured limits; the SDK's copy of the defaults). Steps are walked
by each side (the engine through the node plugins); each step's envelope (an object with an
``id`` and a ``kind``) is checked here too, by ``step_envelope``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Final

from weave_sdk.errors import Problem
from weave_sdk.exactjson import JSON, canonicalize, loads

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError as SchemaError
    from jsonschema.protocols import Validator

SCHEMA: Final[Mapping[str, Any]] = loads(
    resources.files("weave_sdk").joinpath("definition.schema.json").read_bytes()
)
"""The JSON Schema of a schema_version 1 definition document."""

_PROPERTIES: Final[Mapping[str, Any]] = SCHEMA["properties"]
SCHEMA_VERSION: Final[int] = _PROPERTIES["schema_version"]["const"]
TOP_LEVEL_FIELDS: Final = tuple(_PROPERTIES)
REQUIRED_FIELDS: Final = tuple(SCHEMA["required"])
FAILURE_POLICIES: Final = tuple(_PROPERTIES["failure_policy"]["enum"])
DEFINITION_LIMITS: Final = tuple(_PROPERTIES["limits"]["properties"])
"""Limits a definition may tighten in its ``limits`` object (never loosen)."""
RESERVED_VERSIONS: Final = (_PROPERTIES["version"]["allOf"][1]["not"]["const"],)
STEP_ID: Final = re.compile(SCHEMA["$defs"]["step_id"]["pattern"])
"""A step id: it appears in references (``steps.<id>.output``), so it is a path segment."""

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def key_path(path: str, key: str) -> str:
    """``path`` followed by an object key: ``.key``, or ``['odd key']`` when not an identifier."""
    return f"{path}.{key}" if _IDENTIFIER.match(key) else f"{path}[{key!r}]"


@cache
def _validator() -> Validator:
    from weave_sdk.exactschema import ExactValidator  # jsonschema only once something is checked

    return ExactValidator(SCHEMA)  # type: ignore[no-any-return]  # jsonschema's factory is untyped


@cache
def _meta_validator() -> Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(Draft202012Validator.META_SCHEMA)


@cache
def _version_validator() -> Validator:
    return _validator().evolve(schema=_PROPERTIES["schema_version"])


@cache
def _step_validator() -> Validator:
    return _validator().evolve(schema=SCHEMA["$defs"]["step"])


@dataclass(frozen=True)
class Envelope:
    """What the schema's ``$defs/step`` says of one step (at any depth)."""

    problem: Problem | None
    """The step is not an object: nothing else can be checked."""
    id_problem: Problem | None
    kind_problem: Problem | None
    """Only a missing ``kind``: which kinds exist is each side's to say."""
    step_id: str | None
    """The step's id when it is a valid one."""


def step_envelope(raw: JSON, path: str) -> Envelope:
    """Check one step's ``id`` and ``kind`` against the schema."""
    rule = SCHEMA["$defs"]["step"]
    errors = list(_step_validator().iter_errors(raw))
    if not isinstance(raw, Mapping):
        return Envelope(_problem(path, errors[0], "step"), None, None, None)
    missing = {
        name: Problem(f"{path}.{name}", "missing_field", rule["x-weave-missing"][name])
        for name in rule["required"]
        if name not in raw
    }
    id_error = _first([e for e in errors if list(e.absolute_path) == ["id"]])
    id_problem = missing.get("id") or (
        _problem(f"{path}.id", id_error, "id") if id_error is not None else None
    )
    step_id = raw["id"] if id_problem is None else None
    return Envelope(None, id_problem, missing.get("kind"), step_id)


def gate(document: JSON) -> tuple[dict[str, JSON] | None, Problem | None, str]:
    """The checks that stop all others: exact JSON, an object, schema_version 1.

    :return: the canonical document (nothing filled in), or the one problem and a summary.
    """
    try:
        canonical = canonicalize(document)
    except (TypeError, ValueError) as exc:
        return None, Problem("$", "invalid_field", f"not exact JSON: {exc}"), (
            "the definition is not exact JSON"
        )
    if not isinstance(canonical, dict):
        return None, Problem("$", "invalid_field", "a definition is a JSON object"), (
            "the definition must be a JSON object"
        )
    if "schema_version" in canonical:
        version = canonical["schema_version"]
        error = next(_version_validator().iter_errors(version), None)
        if error is not None:
            problem = _problem("$.schema_version", error, "schema_version")
            return None, problem, "unsupported schema_version"
    return canonical, None, ""


def _errors(document: Mapping[str, JSON]) -> dict[str, list[SchemaError]]:
    """The schema's violations by top-level field ("" for the document itself)."""
    found: dict[str, list[SchemaError]] = {}
    for error in _validator().iter_errors(document):
        field = str(error.absolute_path[0]) if error.absolute_path else ""
        found.setdefault(field, []).append(error)
    return found


def _first(errors: list[SchemaError], depth: int = 1) -> SchemaError | None:
    """The violation of the value itself (not inside it, not an unknown key), if any."""
    return next(
        (
            e
            for e in errors
            if len(e.absolute_path) == depth and e.validator != "additionalProperties"
        ),
        None,
    )


def _problem(path: str, error: SchemaError, field: str, **values: Any) -> Problem:
    """``error`` as the problem its schema's annotations name."""
    annotations = error.schema if isinstance(error.schema, Mapping) else {}
    return _annotated(path, annotations, field, error.instance, error=error.message, **values)


def _annotated(
    path: str, annotations: Mapping[str, Any], field: str, value: JSON, **values: Any
) -> Problem:
    template = annotations.get("x-weave-message", "{field} is invalid: {error}")
    message = template.format(field=field, value=value, **values)
    return Problem(path, annotations.get("x-weave-code", "invalid_field"), message)


def top_level_problems(
    document: Mapping[str, JSON], limits: Mapping[str, int]
) -> tuple[list[Problem], dict[str, int]]:
    """Every top-level problem, and ``limits`` as the document's ``limits`` tightens them.

    ``document`` passed ``gate``; ``limits`` holds every limit by name (at least
    ``DEFINITION_LIMITS`` and ``max_id_length``). Steps are left to the caller's walk.
    """
    errors = _errors(document)
    problems: list[Problem] = []
    effective = dict(limits)
    if "limits" in document:
        problems.extend(_limits(document["limits"], errors.get("limits", []), effective))
    problems.extend(
        Problem(f"$.{name}", "missing_field", f"'{name}' is required")
        for name in REQUIRED_FIELDS
        if name not in document
    )
    problems.extend(
        Problem(key_path("$", name), "unknown_field", _unknown(SCHEMA))
        for name in document
        if name not in _PROPERTIES
    )
    for name in ("definition_id", "version"):
        if name in document:
            problems.extend(_name(document[name], errors.get(name, []), name, limits))
    if "deadline_seconds" in document:
        problems.extend(_deadline(document["deadline_seconds"], errors, effective))
    for name in ("failure_policy", "input_schema", "steps"):
        found = errors.get(name, [])
        if name == "input_schema":  # the metaschema's own findings are reported below
            found = [e for e in found if e.validator == "type"]
        error = _first(found)
        if name in document and error is not None:
            problems.append(_problem(f"$.{name}", error, name))
        elif name == "input_schema" and name in document:
            problems.extend(_input_schema(document[name]))
    return problems, effective


def _unknown(schema: Mapping[str, Any]) -> str:
    return str(schema["x-weave-unknown"]).format(fields=", ".join(schema["properties"]))


def _limits(raw: JSON, errors: list[SchemaError], effective: dict[str, int]) -> list[Problem]:
    error = _first(errors)
    if error is not None:
        return [_problem("$.limits", error, "limits")]
    problems = []
    for name, value in raw.items():
        here = key_path("$.limits", name)
        error = _first([e for e in errors if list(e.absolute_path) == ["limits", name]], 2)
        if name not in DEFINITION_LIMITS:
            problems.append(Problem(here, "unknown_field", _unknown(_PROPERTIES["limits"])))
        elif error is not None:
            problems.append(_problem(here, error, name))
        elif value > effective[name]:
            problems.append(
                Problem(
                    here,
                    "limit_exceeded",
                    f"{name} is {value}; the engine allows at most {effective[name]} "
                    "(a definition may only tighten limits)",
                )
            )
        else:
            effective[name] = value
    return problems


def _name(
    value: JSON, errors: list[SchemaError], field: str, limits: Mapping[str, int]
) -> list[Problem]:
    maximum = limits["max_id_length"]
    error = _first(errors)
    if error is not None:
        return [_problem(f"$.{field}", error, field, max_id_length=maximum)]
    if isinstance(value, str) and len(value) > maximum:  # a limit: the schema cannot hold it
        rule = SCHEMA["$defs"]["name"]
        return [_annotated(f"$.{field}", rule, field, value, max_id_length=maximum)]
    return []


def _deadline(
    value: JSON, errors: Mapping[str, list[SchemaError]], limits: Mapping[str, int]
) -> list[Problem]:
    error = _first(errors.get("deadline_seconds", []))
    if error is not None:
        return [_problem("$.deadline_seconds", error, "deadline_seconds")]
    limit = _PROPERTIES["deadline_seconds"]["x-weave-limit"]
    if value > limits[limit]:
        return [
            Problem(
                "$.deadline_seconds",
                "limit_exceeded",
                f"deadline_seconds is {value}; the limit {limit} is {limits[limit]}",
            )
        ]
    return []


def _input_schema(schema: Mapping[str, JSON]) -> list[Problem]:
    """The input schema against the Draft 2020-12 metaschema, each violation at its path."""
    problems = []
    for error in _meta_validator().iter_errors(schema):
        where = "".join(
            f"[{p}]" if isinstance(p, int) else key_path("", p) for p in error.absolute_path
        )
        problems.append(Problem(f"$.input_schema{where}", "input_schema_invalid", error.message))
    return problems


__all__ = [
    "DEFINITION_LIMITS",
    "FAILURE_POLICIES",
    "REQUIRED_FIELDS",
    "RESERVED_VERSIONS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "STEP_ID",
    "TOP_LEVEL_FIELDS",
    "Envelope",
    "gate",
    "key_path",
    "step_envelope",
    "top_level_problems",
]
