"""Local validation's walker state and field checks (types, counts, required, unknown).

The base of the local validator: the kinds' checks (``_local_kinds``) and the document
walk (``weave_sdk.validate``) build on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from weave_sdk._local_refs import _as_int, _is_number, _RefUse, _StepInfo, key_path
from weave_sdk._local_rules import DEFAULT_LIMITS, MAX_ID_LENGTH, PROBLEM_CODES
from weave_sdk.errors import Problem


@dataclass
class _Fields:
    problems: list[Problem] = field(default_factory=list)
    steps: dict[str, _StepInfo] = field(default_factory=dict)
    opaque_ids: set[str] = field(default_factory=set)
    uses: list[_RefUse] = field(default_factory=list)
    order: int = 0
    limits: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_LIMITS))
    """The default limits, as the document's ``limits`` tightens them."""

    def limit(self, name: str) -> tuple[str, int]:
        """``(name, value)`` of a limit, for ``count``."""
        return name, self.limits[name]

    def problem(self, path: str, code: str, message: str) -> None:
        assert code in PROBLEM_CODES, code
        self.problems.append(Problem(path, code, message))

    def required(self, obj: Mapping[str, Any], key: str, path: str) -> Any:
        if key not in obj:
            self.problem(key_path(path, key), "missing_field", f"'{key}' is required")
        return obj.get(key)

    def unknown_fields(self, obj: Mapping[str, Any], allowed: set[str], path: str) -> None:
        for key in obj:
            if key not in allowed:
                self.problem(key_path(path, key), "unknown_field", f"unknown field '{key}'")

    def text(self, obj: Mapping[str, Any], key: str, path: str, *, required: bool) -> None:
        if required and key not in obj:
            self.required(obj, key, path)
            return
        if key in obj:
            value = obj[key]
            if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID_LENGTH:
                self.problem(
                    key_path(path, key),
                    "invalid_field",
                    f"'{key}' must be a string of 1-{MAX_ID_LENGTH} characters",
                )

    def count(
        self,
        obj: Mapping[str, Any],
        key: str,
        path: str,
        *,
        required: bool,
        minimum: int = 1,
        limit: tuple[str, int] | None = None,
    ) -> int | None:
        """A whole number >= ``minimum`` (counts and durations in seconds), within ``limit``."""
        if required and key not in obj:
            self.required(obj, key, path)
            return None
        if key not in obj:
            return None
        value = _as_int(obj[key])
        if value is None or value < minimum:
            self.problem(
                key_path(path, key), "invalid_field", f"'{key}' must be an integer >= {minimum}"
            )
            return None
        if limit is not None and value > limit[1]:
            self.problem(
                key_path(path, key),
                "limit_exceeded",
                f"{key} is {value}; the limit {limit[0]} is {limit[1]}",
            )
        return value

    def number(self, obj: Mapping[str, Any], key: str, path: str, minimum: int) -> None:
        if key not in obj:
            return
        value = obj[key]
        if not _is_number(value) or value < minimum:
            self.problem(
                key_path(path, key), "invalid_field", f"'{key}' must be a number >= {minimum}"
            )

    def obj(self, value: Any, path: str, what: str) -> Mapping[str, Any] | None:
        if not isinstance(value, Mapping):
            self.problem(path, "invalid_field", f"{what} must be an object")
            return None
        return value

