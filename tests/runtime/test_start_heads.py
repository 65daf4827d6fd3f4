"""A start whose program this process compiled already skips its look-up transaction and
checks the guessed version in its own opening reads (``runtime.start_heads``), on a real
MariaDB: no look-up, a newer ``latest`` still started, an original start still answered."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from prometheus_client import REGISTRY

from tests.runtime.helpers import definition, new_namespace, publish, start, task
from weave_core.engine import Engine
from weave_core.foundation.errors import ValidationError
from weave_core.runtime import start_heads


def _transactions(name: str) -> float:
    return REGISTRY.get_sample_value("weave_transaction_duration_seconds_count",
                                     {"transaction": name}) or 0.0


def _statements(engine: Engine) -> tuple[list[str], Any]:
    seen: list[str] = []

    def listen(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement)
    sa.event.listen(engine.db.engine, "before_cursor_execute", listen)
    return seen, listen


def test_a_second_start_of_a_name_needs_no_look_up(engine: Engine) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("seq", [task("a")]))
    first = start(engine, ns, "seq", {})
    assert first.created
    looked_up = _transactions("start_lookup")
    again = start(engine, ns, "seq", {})
    assert again.created and again.instance.version == first.instance.version == "1"
    assert _transactions("start_lookup") == looked_up


def test_a_newer_latest_is_started_although_the_guess_was_older(engine: Engine) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("seq", [task("a")]))
    assert start(engine, ns, "seq", {}).instance.version == "1"
    assert start_heads.guess(engine, ns, "seq", "latest") is not None
    # another process publishes version 2: this one's guess is now stale
    publish(engine, ns, definition("seq", [task("a"), task("b")], version="2"))
    assert start_heads.guess(engine, ns, "seq", "latest").version == "1"  # type: ignore[union-attr]
    looked_up = _transactions("start_lookup")
    started = start(engine, ns, "seq", {})
    assert started.created and started.instance.version == "2"
    assert _transactions("start_lookup") == looked_up + 1  # the long way, once
    head = start_heads.guess(engine, ns, "seq", "latest")
    assert head is not None and head.version == "2"
    assert start(engine, ns, "seq", {}).instance.version == "2"
    assert _transactions("start_lookup") == looked_up + 1


def test_a_named_version_is_guessed_without_a_head_read_mismatch(engine: Engine) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("seq", [task("a")]))
    publish(engine, ns, definition("seq", [task("a"), task("b")], version="2"))
    assert start(engine, ns, "seq", {}, version="1").instance.version == "1"
    looked_up = _transactions("start_lookup")
    assert start(engine, ns, "seq", {}, version="1").instance.version == "1"
    assert _transactions("start_lookup") == looked_up


def test_the_original_start_answers_after_a_newer_version(engine: Engine) -> None:
    """R-3.2: the same key and request return the original instance, even when the guess
    (the newer version) would refuse the input."""
    ns = new_namespace(engine)
    publish(engine, ns, definition("seq", [task("a")]))
    original = start(engine, ns, "seq", {"n": 1}, key="k-1")
    strict = definition("seq", [task("a")], version="2",
                        input_schema={"type": "object", "required": ["m"]})
    publish(engine, ns, strict)
    assert start(engine, ns, "seq", {"m": 1}).instance.version == "2"  # guess is now 2
    again = start(engine, ns, "seq", {"n": 1}, key="k-1")
    assert not again.created
    assert again.instance.instance_id == original.instance.instance_id
    with pytest.raises(ValidationError):  # a new key: version 2, which requires m
        start(engine, ns, "seq", {"n": 1}, key="k-2")
