"""The SDK's exact JSON: int/Decimal in and out, hostile input refused."""

from __future__ import annotations

from decimal import Decimal

import pytest

from weave_sdk import JSONDecodeError, dumps, loads


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
