"""A start hands its first tasks to a worker parked in this process's long poll
(``dispatch.handoff.parked_claimer``): they are started in the start's own transaction and
are the parked claim's answer once it committed — no claim transaction, no wake-up — and a
claimer reserved by a transaction that hands it nothing claims as usual."""

from __future__ import annotations

import asyncio
import importlib
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from tests.runtime.helpers import (
    definition,
    instance,
    new_namespace,
    publish,
    report,
    rows,
    run_worker,
    start,
    task,
    tasks_of,
)
from weave_core.dispatch import (
    HandlerRef,
    Report,
    ReportOutcome,
    set_namespace_quota,
    set_queue_capacity,
)
from weave_core.dispatch.claim import claim_wait
from weave_core.dispatch.model import ClaimedTask
from weave_core.dispatch.wakeup import hub_for
from weave_core.engine import Engine
from weave_core.runtime.step import ClaimNext, complete_step
from weave_core.storage.schema import weave_task_attempts


def _namespace(engine: Engine, document: dict[str, Any]) -> str:
    """A namespace with its counters (a start without them takes the classic way, which
    creates them and hands nothing off) and ``document`` published."""
    ns = new_namespace(engine)
    set_namespace_quota(engine.db, ns, 100, actor="test")
    set_queue_capacity(engine.db, ns, "q", 100, actor="test")
    publish(engine, ns, document)
    return ns


def _finish(engine: Engine, ns: str, wid: str, handed: Sequence[ClaimedTask]) -> None:
    """Report what was handed out and run the rest: no lease is left running for later
    tests (a tick with the clock moved on would expire it)."""
    for claimed in handed:
        report(engine, ns, claimed, {})
    run_worker(engine, ns, {"a": {}, "b": {}})
    assert instance(engine, wid).status == "SUCCEEDED"


class Parked:
    """A long-poll claim running on its own event loop in a thread."""

    def __init__(self) -> None:
        self.tasks: list[ClaimedTask] | None = None
        self.seconds = 0.0


@contextmanager
def parked(engine: Engine, ns: str, handlers: Sequence[str], *, max_tasks: int = 1,
           wait: float = 10.0) -> Iterator[Parked]:
    answer = Parked()

    def _run() -> None:
        began = time.monotonic()
        answer.tasks = asyncio.run(claim_wait(
            engine.db, namespace=ns, queue="q", worker_id="parked-worker",
            handlers=[HandlerRef(h, "1") for h in handlers], max_tasks=max_tasks,
            wait_seconds=wait))
        answer.seconds = time.monotonic() - began

    thread = threading.Thread(target=_run)
    before = hub_for(engine.db).parked((ns, "q"))
    thread.start()
    deadline = time.monotonic() + 10
    while hub_for(engine.db).parked((ns, "q")) <= before:
        assert time.monotonic() < deadline, "the claimer never parked"
        time.sleep(0.002)
    try:
        yield answer
    finally:
        thread.join(wait + 10)
        assert not thread.is_alive()


@pytest.fixture
def claims(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many claim transactions the long polls ran (one entry per call)."""
    calls: list[int] = []
    claim_module = importlib.import_module("weave_core.dispatch.claim")  # not the function
    real = claim_module.claim

    def _counted(*args: Any, **kwargs: Any) -> list[ClaimedTask]:
        calls.append(1)
        tasks: list[ClaimedTask] = real(*args, **kwargs)
        return tasks

    monkeypatch.setattr(claim_module, "claim", _counted)
    return calls


def test_a_start_hands_its_first_task_to_the_parked_claimer(
    engine: Engine, claims: list[int]
) -> None:
    ns = _namespace(engine, definition("seq", [task("a"), task("b")]))
    with parked(engine, ns, ["a", "b"]) as answer:
        wid = start(engine, ns, "seq", {}).instance.instance_id
    assert answer.tasks is not None and len(answer.tasks) == 1, answer.tasks
    assert answer.seconds < 5
    assert claims == []  # its first look was one read; the task came with the start
    (first,) = tasks_of(engine, wid)
    assert (first.task_id, first.status) == (answer.tasks[0].task_id, "RUNNING")
    (attempt,) = rows(engine, weave_task_attempts,
                      weave_task_attempts.c.task_id == first.task_id)
    assert (attempt.attempt_id, attempt.worker_id) == (answer.tasks[0].attempt_id,
                                                       "parked-worker")
    assert attempt.started_at == first.created_at  # started in the start's transaction
    done = complete_step(
        engine, namespace=ns, task_id=first.task_id, attempt_id=attempt.attempt_id,
        report=Report(ReportOutcome.SUCCEEDED, output={}), actor="worker:test",
        claim_next=ClaimNext("parked-worker", [HandlerRef("b", "1")], 1))
    assert done.one_transaction and [t.handler for t in done.next_tasks] == ["b"]
    _finish(engine, ns, wid, done.next_tasks)


def test_the_parked_claimer_gets_no_more_than_it_asked_and_only_its_handlers(
    engine: Engine, claims: list[int]
) -> None:
    ns = _namespace(engine, definition("fan", [{
        "id": "fan", "kind": "parallel",
        "branches": {f"b{i}": [task(f"f{i}", "a")] for i in range(3)}}]))
    with parked(engine, ns, ["zzz"], wait=0.5) as stranger:
        with parked(engine, ns, ["a"], max_tasks=2) as answer:
            wid = start(engine, ns, "fan", {}).instance.instance_id
    assert answer.tasks is not None and len(answer.tasks) == 2
    assert stranger.tasks == []  # serves another handler: not reserved, nothing claimed
    statuses = sorted(t.status for t in tasks_of(engine, wid))
    assert statuses == ["PENDING", "RUNNING", "RUNNING"]
    _finish(engine, ns, wid, answer.tasks)


def test_a_reserved_claimer_waits_for_the_hand_off_and_claims_when_released(
    engine: Engine, claims: list[int]
) -> None:
    ns = _namespace(engine, definition("seq", [task("a")]))
    hub = hub_for(engine.db)
    with parked(engine, ns, ["a"]) as answer:
        waiter = hub.reserve(ns, "q", "a@1")  # as a transaction that creates tasks does
        assert waiter is not None and hub.parked((ns, "q")) == 0
        wid = start(engine, ns, "seq", {}).instance.instance_id  # cannot take it: reserved
        time.sleep(0.2)
        assert [t.status for t in tasks_of(engine, wid)] == ["PENDING"]
        assert answer.tasks is None and claims == []  # woken, but held: no claim
        assert hub.hand(waiter, [])  # nothing handed: it claims as usual
    assert answer.tasks is not None and len(answer.tasks) == 1
    assert claims == [1]
    assert [t.status for t in tasks_of(engine, wid)] == ["RUNNING"]
    _finish(engine, ns, wid, answer.tasks)


def test_the_first_look_is_one_read_and_a_pending_task_is_claimed_at_once(
    engine: Engine, claims: list[int]
) -> None:
    """A long poll on an empty queue parks after one read, without a claim transaction
    (the probe, ``WakeupHub.pending``); a queue with a task pending is claimed at once."""
    ns = _namespace(engine, definition("seq", [task("a")]))
    hub = hub_for(engine.db)
    assert hub.pending((ns, "q"), ["a@1"]) is False
    with parked(engine, ns, ["a"], wait=0.3) as empty:
        pass
    assert empty.tasks == [] and empty.seconds >= 0.3
    assert claims == []  # one read, then it waited until its time ran out
    wid = start(engine, ns, "seq", {}).instance.instance_id  # nobody waits: PENDING
    assert hub.pending((ns, "q"), ["a@1"]) is True
    assert hub.pending((ns, "q"), ["b@1"]) is False  # another handler's claim finds none
    claims.clear()
    began = time.monotonic()
    handed = asyncio.run(claim_wait(engine.db, namespace=ns, queue="q", worker_id="w",
                                    handlers=[HandlerRef("a", "1")], wait_seconds=10))
    assert time.monotonic() - began < 5 and claims == [1]
    assert [t.task_id for t in handed] == [t.task_id for t in tasks_of(engine, wid)]
    _finish(engine, ns, wid, handed)


def test_a_wait_that_runs_out_while_reserved_ends_when_released(engine: Engine) -> None:
    ns = new_namespace(engine)
    hub = hub_for(engine.db)
    with parked(engine, ns, ["a"], wait=0.2) as answer:
        waiter = hub.reserve(ns, "q", "a@1")
        assert waiter is not None
        time.sleep(0.5)
        assert answer.tasks is None  # past its wait, still held
        assert hub.hand(waiter, [])
    assert answer.tasks == [] and answer.seconds >= 0.5


def test_handing_to_a_claimer_that_left_says_so(engine: Engine) -> None:
    ns = new_namespace(engine)
    hub = hub_for(engine.db)

    async def _leave() -> bool:
        with hub.listening((ns, "q"), ["a@1"], "gone-worker", 1) as waiter:
            hub.park(waiter)
            reserved = hub.reserve(ns, "q", "a@1")
            assert reserved is waiter
        return hub.hand(waiter, ["a task"])  # its client went away meanwhile

    assert asyncio.run(_leave()) is False
    assert hub.waiting((ns, "q")) == 0


def test_a_parked_claimer_gets_the_start_s_task_on_every_database(
    any_engine: Engine,
) -> None:
    """MariaDB hands it off in the start; SQLite wakes the claimer, which claims it."""
    ns = _namespace(any_engine, definition("seq", [task("a")]))
    with parked(any_engine, ns, ["a"]) as answer:
        wid = start(any_engine, ns, "seq", {}).instance.instance_id
    assert answer.tasks is not None and len(answer.tasks) == 1
    assert answer.seconds < 5
    assert [(t.task_id, t.status) for t in tasks_of(any_engine, wid)] == [
        (answer.tasks[0].task_id, "RUNNING")]
    _finish(any_engine, ns, wid, answer.tasks)
