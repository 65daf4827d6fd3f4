"""Problems from pydantic errors: a step's config checked by its kind's model becomes
``missing_field`` / ``unknown_field`` / ``invalid_value`` problems at JSON paths."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from weave_core.foundation.errors import Problem
from weave_sdk import docformat


def loc_path(
    path: str, loc: Sequence[str | int], document: Any = None, *, missing: bool = False
) -> str:
    """A pydantic error location as a JSON path below ``path``.

    With ``document`` (the validated input), segments that are not in the input are
    dropped: pydantic adds union member tags (``int``, ``str``, ``function-after[...]``)
    that are no part of the JSON path. Only for a ``missing`` error is the absent last
    segment kept: it names the missing field.
    """
    current = document
    for index, item in enumerate(loc):
        if item == "[key]":  # pydantic marks errors in a dict key with this pseudo-segment
            continue
        last = index == len(loc) - 1
        if document is not None:
            if isinstance(current, Mapping) and isinstance(item, str) and item in current:
                current = current[item]
            elif isinstance(current, list) and isinstance(item, int) and item < len(current):
                current = current[item]
            elif not (last and missing and isinstance(current, Mapping)):
                continue  # a union member tag, not a place in the document
        path = f"{path}[{item}]" if isinstance(item, int) else docformat.key_path(path, item)
    return path


def pydantic_problems(
    exc: PydanticValidationError, path: str, document: Any = None
) -> list[Problem]:
    """Map pydantic errors to problems: missing → ``missing_field``, extra → ``unknown_field``.

    Errors of several union members at one place become one problem whose message lists
    what each member wanted.
    """
    merged: dict[tuple[str, str], list[str]] = {}
    for error in exc.errors(include_url=False):
        code = {"missing": "missing_field", "extra_forbidden": "unknown_field"}.get(
            error["type"], "invalid_field"
        )
        message = error["msg"]
        if message.startswith("Value error, "):
            message = message.removeprefix("Value error, ")
        where = loc_path(path, error["loc"], document, missing=error["type"] == "missing")
        messages = merged.setdefault((where, code), [])
        if message not in messages:
            messages.append(message)
    return [Problem(where, code, " or ".join(msgs)) for (where, code), msgs in merged.items()]


__all__ = ["loc_path", "pydantic_problems"]
