"""A start answers with the instance as its own transaction left it, built from what it
wrote (no read-back): the answer equals a fresh read of the row, whether the start leaves
the instance running, finishes it at once, or sends it to review."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.runtime.helpers import definition, new_namespace, publish, start, task
from weave_core.engine import Engine
from weave_core.runtime.admission import read_instance

_DEFINITIONS: dict[str, list[Any]] = {
    "running": [task("a"), task("b")],
    "fan": [{"id": "fan", "kind": "parallel", "branches": {
        "l": [task("l")], "r": [task("r")]}}],
    "done_at_once": [{"id": "route", "kind": "branch", "cases": [
        {"when": {"gt": [{"$ref": "input.amount"}, Decimal("1000")]}, "steps": [task("big")]},
        {"default": True, "steps": []}]}],
    "review_at_once": [task("a", inp={"v": {"$ref": "input.missing.deeper"}})],
}


@pytest.mark.parametrize("shape", sorted(_DEFINITIONS))
def test_the_start_answer_is_the_row_it_committed(any_engine: Engine, shape: str) -> None:
    engine = any_engine
    ns = new_namespace(engine)
    publish(engine, ns, definition(shape, _DEFINITIONS[shape]))
    started = start(engine, ns, shape, {"amount": Decimal("12.50"), "b": {"z": 1, "a": [2]}})
    assert started.created
    fresh = engine.db.read(lambda conn: read_instance(conn, ns, started.instance.instance_id))
    assert started.instance == fresh
    assert started.instance.to_json() == fresh.to_json()
    again = start(engine, ns, shape, {"amount": Decimal("12.50"), "b": {"z": 1, "a": [2]}},
                  key=started.instance.idempotency_key)
    assert not again.created and again.instance == fresh  # the original start, read


def test_the_shapes_cover_a_start_that_finishes_and_one_that_stops(any_engine: Engine) -> None:
    """The cases above are what they claim: one start ends its instance, one stops it."""
    engine = any_engine
    ns = new_namespace(engine)
    statuses = {}
    for shape in ("running", "done_at_once", "review_at_once"):
        publish(engine, ns, definition(shape, _DEFINITIONS[shape]))
        statuses[shape] = start(engine, ns, shape, {"amount": Decimal("1")}).instance.status.value
    assert statuses["running"] == "RUNNING"
    assert statuses["done_at_once"] == "SUCCEEDED"
    assert statuses["review_at_once"] not in ("RUNNING", "SUCCEEDED")
