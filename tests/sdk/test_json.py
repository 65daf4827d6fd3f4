"""The SDK's exact JSON: int/Decimal in and out, hostile input refused."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weave_sdk import JSONDecodeError, dumps, exactjson, loads


def test_numbers_parse_exactly() -> None:
    value = loads(b'{"a": 9007199254740993, "b": 1.10, "c": 1e-400, "d": -0.0}')
    assert value["a"] == 9007199254740993 and isinstance(value["a"], int)
    assert value["b"] == Decimal("1.10") and str(value["b"]) == "1.10"
    assert value["c"] > 0
    assert isinstance(value["d"], Decimal)


@pytest.mark.parametrize(
    "text",
    [
        b'{"a": NaN}',
        b'{"a": Infinity}',
        b'{"a": -Infinity}',
        b'{"a": 1, "a": 2}',
        b"\xff{}",
        b"{",
        b"[" * 65 + b"]" * 65,
    ],
)
def test_hostile_input_is_refused(text: bytes) -> None:
    with pytest.raises(JSONDecodeError):
        loads(text)


def test_dumps_is_compact_keeps_order_and_spelling() -> None:
    assert dumps({"b": Decimal("1.10"), "a": [True, None, "é"]}) == '{"b":1.10,"a":[true,null,"é"]}'
    assert dumps(9007199254740993) == "9007199254740993"


@pytest.mark.parametrize("value", [0.5, {"a": [1.0]}, Decimal("NaN"), {1: "x"}, object()])
def test_dumps_refuses_what_is_not_exact_json(value: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        dumps(value)


@pytest.mark.parametrize("text", [
    "", "plain", 'quote " and backslash \\', "tab\tnew\nline\r\x00\x1f\x7f",
    "non-ASCII é ß 漢字 \u2603 \U0001f600", "\u2028\u2029 separators", "</script>",
])
def test_a_string_is_written_as_the_standard_encoder_writes_it(text: str) -> None:
    """Strings go through the C string encoder directly; the text (and so every content
    hash) is exactly what ``json.dumps(..., ensure_ascii=False)`` writes."""
    expected = json.dumps({"k": text, text: [text]}, ensure_ascii=False, sort_keys=True,
                          separators=(",", ":"))
    assert exactjson.canonical_dumps({"k": text, text: [text]}) == expected
    assert exactjson.loads(exactjson.dumps(text)) == text


_canonical_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**30, 10**30) | st.text()
    | st.decimals(allow_nan=False, allow_infinity=False, places=None).filter(
        lambda d: d.is_finite() and len(d.as_tuple().digits) < 60),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=20,
)


@given(_canonical_values)
def test_stored_canonical_text_reads_back_as_the_strict_reader_reads_it(value: object) -> None:
    """``loads_stored`` (the engine's reader of its own columns) gives what ``loads`` gives
    for every canonical text: the same values, the same types (int stays int, Decimal
    keeps its digits)."""
    text = exactjson.canonical_dumps(value)
    strict, stored = loads(text), exactjson.loads_stored(text)
    assert stored == strict
    assert exactjson.canonical_dumps(stored) == text
    assert json.dumps(stored, default=repr, sort_keys=True) == json.dumps(
        strict, default=repr, sort_keys=True)


@pytest.mark.parametrize("text", ["{", "", "[1,]", '{"a" 1}'])
def test_stored_text_that_is_not_json_is_refused(text: str) -> None:
    with pytest.raises(JSONDecodeError):
        exactjson.loads_stored(text)


def test_nesting_is_refused_past_the_limit_and_brackets_in_strings_do_not_count() -> None:
    """The depth walk is skipped when the text has no more brackets than the limit: a
    document exactly at the limit reads, one level more is refused, and brackets inside
    strings (which only raise the count) never make a shallow document too deep."""
    assert exactjson.depth(loads(b"[" * 64 + b"]" * 64)) == 64
    with pytest.raises(exactjson.JSONTooDeepError):
        loads(b"[" * 65 + b"]" * 65)
    with pytest.raises(exactjson.JSONTooDeepError):
        loads(b'{"a":' * 3 + b"[]" + b"}" * 3, max_depth=3)
    shallow = {"text": "[" * 100 + "{" * 100, "list": [1, [2]]}
    assert loads(json.dumps(shallow).encode(), max_depth=3) == shallow  # depth 3
    with pytest.raises(exactjson.JSONTooDeepError):
        loads(json.dumps({"text": "[" * 100, "list": [[[1]]]}).encode(), max_depth=3)
