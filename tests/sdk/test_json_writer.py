"""The exact JSON writer's fast path by exact type writes what the plain ``isinstance``
chain wrote before it, refusals included: a reference copy of that chain is the oracle
for documents of every shape hypothesis draws (subclasses, other mappings and sequences,
``Decimal``, floats, non-finite numbers, keys that are not strings, bytes, sets)."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from weave_sdk import _json_writer as writer
from weave_sdk.exactjson import NotJSONError, canonical_number


class _Level(enum.IntEnum):
    LOW = 1


class _Name(enum.StrEnum):
    A = "a"


def _reference(value: Any, out: list[str], canonical: bool) -> None:
    """The writer as it was before its fast path (weave_sdk/exactjson.py, 2026-12-05)."""
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(writer._string(value))
    elif isinstance(value, int | Decimal):
        out.append(canonical_number(value) if canonical else writer._plain_number(value))
    elif isinstance(value, float):
        raise NotJSONError(
            f"float {value!r} is not exact; use int or Decimal (e.g. Decimal('1.1'))")
    elif isinstance(value, Mapping):
        out.append("{")
        for index, key in enumerate(sorted(value) if canonical else value):
            if not isinstance(key, str):
                raise NotJSONError(f"JSON object keys must be str, not {type(key).__name__}")
            if index:
                out.append(",")
            out.append(writer._string(key))
            out.append(":")
            try:
                _reference(value[key], out, canonical)
            except NotJSONError as exc:
                exc.segments.append(f".{key}")
                raise
        out.append("}")
    elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            try:
                _reference(item, out, canonical)
            except NotJSONError as exc:
                exc.segments.append(f"[{index}]")
                raise
        out.append("]")
    else:
        raise NotJSONError(f"{type(value).__name__} is not JSON")


def _outcome(write: Any, value: Any, canonical: bool) -> tuple[str, str]:
    out: list[str] = []
    try:
        write(value, out, canonical)
    except NotJSONError as exc:
        public = exc.public()
        return type(public).__name__, str(public)
    except Exception as exc:  # what the old writer let through (sorting mixed keys)
        return type(exc).__name__, str(exc)
    return "ok", "".join(out)


_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=8),
    st.decimals(allow_nan=True, allow_infinity=True), st.floats(),
    st.sampled_from([_Level.LOW, _Name.A, b"x", bytearray(b"y"), {1, 2}, frozenset()]),
)
_KEYS = st.one_of(st.text(max_size=4), st.sampled_from([1, None, ("t",)]))
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=4), children, max_size=4),
        st.dictionaries(_KEYS, children, max_size=3),
        st.dictionaries(st.text(max_size=3), children, max_size=3).map(MappingProxyType),
    ),
    max_leaves=12,
)


@settings(max_examples=600, deadline=None)
@given(_DOCUMENTS, st.booleans())
def test_the_fast_writer_writes_and_refuses_as_the_plain_one_did(
    value: Any, canonical: bool
) -> None:
    assert _outcome(writer.encode, value, canonical) == _outcome(_reference, value,
                                                                      canonical)


def test_a_refusal_deep_in_a_document_names_its_path() -> None:
    value = {"a": [1, {"b": [Decimal("1.5"), 2.5]}], "c": "x"}
    outcome = _outcome(writer.encode, value, True)
    assert outcome == ("TypeError", "$.a[1].b[1]: float 2.5 is not exact; use int or "
                       "Decimal (e.g. Decimal('1.1'))")
    assert outcome == _outcome(_reference, value, True)
