"""The builder: exact JSON of every built-in kind, the DESIGN.md example, round trips."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from tests.sdk.design_example import DESIGN_EXAMPLE_JSON, build_external_job
from weave_sdk import (
    BranchStep,
    Case,
    Classify,
    CustomStep,
    Default,
    DefinitionFormatError,
    Handler,
    ParallelStep,
    PollStep,
    Receipt,
    RetryPolicy,
    SignalStep,
    TaskStep,
    Timeouts,
    TimerStep,
    Workflow,
    all_of,
    any_of,
    dumps,
    eq,
    exists,
    ge,
    gt,
    in_,
    le,
    loads,
    lt,
    ne,
    not_,
    ref,
)

SCHEMA = {"type": "object"}


def workflow(*steps: Any, **kwargs: Any) -> Workflow:
    return Workflow(
        "wf", version="1", input_schema=SCHEMA, failure_policy="REVIEW", steps=steps, **kwargs
    )


def test_design_example_is_built_literally() -> None:
    assert build_external_job().to_json() == loads(DESIGN_EXAMPLE_JSON)


def test_design_example_round_trips() -> None:
    document = loads(DESIGN_EXAMPLE_JSON)
    workflow = Workflow.from_json(document)
    assert workflow.to_json() == document
    assert workflow == build_external_job()


def test_to_json_returns_a_copy() -> None:
    wf = build_external_job()
    document = wf.to_json()
    document["steps"][3]["input"]["extra"] = 1
    document["input_schema"]["type"] = "array"
    assert wf.to_json() == loads(DESIGN_EXAMPLE_JSON)
    step = wf.steps[0]
    step.to_json()["input"].clear()
    assert step.to_json()["input"] != {}


def test_top_level_has_only_what_was_set() -> None:
    assert workflow().to_json() == {
        "schema_version": 1,
        "definition_id": "wf",
        "version": "1",
        "input_schema": SCHEMA,
        "failure_policy": "REVIEW",
        "steps": [],
    }
    full = workflow(deadline=3600, limits={"max_steps": 10}).to_json()
    assert full["deadline_seconds"] == 3600
    assert full["limits"] == {"max_steps": 10}
    assert list(full) == [
        "schema_version",
        "definition_id",
        "version",
        "input_schema",
        "deadline_seconds",
        "failure_policy",
        "limits",
        "steps",
    ]


def test_optional_fields_are_left_out() -> None:
    wf = Workflow("wf", version="1")
    wf.task("t", queue="q", handler=Handler("h", "1"))
    wf.poll(
        "p",
        queue="q",
        handler=Handler("s", "1"),
        max_rounds=2,
        interval=1,
        deadline=10,
        classify=Classify("s", pending=[], succeeded=["OK"], failed=[]),
    )
    document = wf.to_json()
    assert document == {
        "schema_version": 1,
        "definition_id": "wf",
        "version": "1",
        "steps": [
            {"id": "t", "kind": "task", "queue": "q", "handler": {"name": "h", "version": "1"}},
            {
                "id": "p",
                "kind": "poll",
                "queue": "q",
                "handler": {"name": "s", "version": "1"},
                "max_rounds": 2,
                "interval_seconds": 1,
                "deadline_seconds": 10,
                "classify": {"field": "s", "pending": [], "succeeded": ["OK"], "failed": []},
            },
        ],
    }
    assert Workflow.from_json(document).to_json() == document


def test_task_minimal_and_full() -> None:
    minimal = TaskStep("t", queue="q", handler=Handler("h", "1"), input={})
    assert minimal.to_json() == {
        "id": "t",
        "kind": "task",
        "queue": "q",
        "handler": {"name": "h", "version": "1"},
        "input": {},
    }
    full = TaskStep(
        "t",
        queue="q",
        handler=Handler("h", "1", idempotent=True),
        input={"a": [ref.input("x"), 1, Decimal("2.50"), None, True, "s"]},
        output_schema={"type": "object"},
        retry=RetryPolicy(
            max_attempts=5,
            backoff=timedelta(milliseconds=1500),
            backoff_multiplier=Decimal("1.5"),
            max_backoff=timedelta(minutes=1),
        ),
        timeouts=Timeouts(schedule_to_start=60, start_to_close=timedelta(minutes=5), heartbeat=10),
    )
    assert full.to_json() == {
        "id": "t",
        "kind": "task",
        "queue": "q",
        "handler": {"name": "h", "version": "1", "idempotent": True},
        "input": {"a": [{"$ref": "input.x"}, 1, Decimal("2.50"), None, True, "s"]},
        "output_schema": {"type": "object"},
        "retry": {
            "max_attempts": 5,
            "backoff_seconds": Decimal("1.5"),
            "backoff_multiplier": Decimal("1.5"),
            "max_backoff_seconds": 60,
        },
        "timeouts": {"schedule_to_start": 60, "start_to_close": 300, "heartbeat": 10},
    }


def test_retry_and_timeouts_send_only_set_fields() -> None:
    step = TaskStep(
        "t",
        queue="q",
        handler=Handler("h", "1"),
        input={},
        retry=RetryPolicy(max_attempts=2),
        timeouts=Timeouts(heartbeat=5),
    )
    assert step.to_json()["retry"] == {"max_attempts": 2}
    assert step.to_json()["timeouts"] == {"heartbeat": 5}


def test_signal() -> None:
    assert SignalStep("s", name="go", correlation_key=ref.input("k")).to_json() == {
        "id": "s",
        "kind": "signal",
        "name": "go",
        "correlation_key": {"$ref": "input.k"},
    }
    full = SignalStep(
        "s", name="go", correlation_key="fixed", param_version="2", timeout=timedelta(hours=2)
    )
    assert full.to_json() == {
        "id": "s",
        "kind": "signal",
        "name": "go",
        "correlation_key": "fixed",
        "param_version": "2",
        "timeout_seconds": 7200,
    }


def test_timer() -> None:
    assert TimerStep("w", duration=timedelta(minutes=2)).to_json() == {
        "id": "w",
        "kind": "timer",
        "seconds": 120,
    }
    assert TimerStep("w", duration=5).to_json()["seconds"] == 5


def test_poll_with_and_without_receipt() -> None:
    step = PollStep(
        "p",
        queue="q",
        handler=Handler("status", "1"),
        input={"id": ref.step("submit").output("job", "id")},
        max_rounds=3,
        interval=10,
        deadline=timedelta(minutes=1),
        attempts_per_round=2,
        classify=Classify("state", pending=["RUN"], succeeded=["OK", 1], failed=[]),
    )
    assert step.to_json() == {
        "id": "p",
        "kind": "poll",
        "queue": "q",
        "handler": {"name": "status", "version": "1"},
        "input": {"id": {"$ref": "steps.submit.output.job.id"}},
        "max_rounds": 3,
        "interval_seconds": 10,
        "deadline_seconds": 60,
        "attempts_per_round": 2,
        "classify": {"field": "state", "pending": ["RUN"], "succeeded": ["OK", 1], "failed": []},
    }
    with_receipt = PollStep(
        "p",
        queue="q",
        handler=Handler("status", "1"),
        input={},
        max_rounds=3,
        interval=10,
        deadline=60,
        attempts_per_round=2,
        classify=Classify("state", pending=[], succeeded=["OK"], failed=["NO"]),
        receipt=Receipt("done", ref.input("k"), param_version="3"),
    )
    assert with_receipt.to_json()["receipt"] == {
        "name": "done",
        "correlation_key": {"$ref": "input.k"},
        "param_version": "3",
    }


def test_branch_and_parallel_nest_steps() -> None:
    timer = TimerStep("t1", duration=1)
    branch = BranchStep("b", [Case(exists(ref.input("x")), [timer]), Default([])])
    assert branch.to_json() == {
        "id": "b",
        "kind": "branch",
        "cases": [
            {"when": {"exists": {"$ref": "input.x"}}, "steps": [timer.to_json()]},
            {"default": True, "steps": []},
        ],
    }
    par = ParallelStep("p", {"a": [branch], "b": []})
    assert par.to_json() == {
        "id": "p",
        "kind": "parallel",
        "branches": {"a": [branch.to_json()], "b": []},
    }


def test_custom_kind_passes_through() -> None:
    step = CustomStep("h", "acme.http_wait", {"url_key": ref.input("u"), "n": 3})
    assert step.to_json() == {
        "id": "h",
        "kind": "acme.http_wait",
        "url_key": {"$ref": "input.u"},
        "n": 3,
    }
    document = workflow(step).to_json()
    assert Workflow.from_json(document).steps[0] == step
    with pytest.raises(ValueError, match="'kind' is set by the step"):
        CustomStep("h", "acme", {"kind": "x"})


def test_workflow_builder_methods_return_steps() -> None:
    wf = workflow()
    task = wf.task("a", queue="q", handler=Handler("h", "1"), input={})
    timer = wf.timer("b", duration=1)
    signal = wf.signal("c", name="n", correlation_key=task.output("id"))
    assert [s.id for s in wf.steps] == ["a", "b", "c"]
    assert isinstance(timer, TimerStep)
    assert signal.correlation_key == {"$ref": "steps.a.output.id"}
    wf.add(TimerStep("d", duration=2), TimerStep("e", duration=3))
    assert [s.id for s in wf.steps] == ["a", "b", "c", "d", "e"]


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        (eq(ref.input("a"), 1), {"eq": [{"$ref": "input.a"}, 1]}),
        (ne(ref.input("a"), "x"), {"ne": [{"$ref": "input.a"}, "x"]}),
        (lt(ref.input("a"), Decimal("1.5")), {"lt": [{"$ref": "input.a"}, Decimal("1.5")]}),
        (le(1, ref.input("a")), {"le": [1, {"$ref": "input.a"}]}),
        (gt(ref.input("a"), ref.input("b")), {"gt": [{"$ref": "input.a"}, {"$ref": "input.b"}]}),
        (ge(ref.input("a"), 0), {"ge": [{"$ref": "input.a"}, 0]}),
        (in_(ref.input("a"), ["x", 2]), {"in": [{"$ref": "input.a"}, ["x", 2]]}),
        (exists(ref.step("s").output("f")), {"exists": {"$ref": "steps.s.output.f"}}),
        (all_of(True, eq(1, 1)), {"and": [True, {"eq": [1, 1]}]}),
        (any_of(False), {"or": [False]}),
        (not_(exists(ref.input("a"))), {"not": {"exists": {"$ref": "input.a"}}}),
        (eq(1, 1) & ~eq(2, 2), {"and": [{"eq": [1, 1]}, {"not": {"eq": [2, 2]}}]}),
        (eq(1, 1) | False, {"or": [{"eq": [1, 1]}, False]}),
    ],
)
def test_conditions(condition: Any, expected: Any) -> None:
    assert condition.to_json() == expected


def test_reference_paths() -> None:
    assert ref.input().path == "input"
    assert ref.input("a.b", 0).path == "input.a.b.0"
    assert ref.input("items")[2]["name"].path == "input.items.2.name"
    assert ref.step("quote").output().path == "steps.quote.output"
    with pytest.raises(ValueError, match="path segment"):
        ref.input("a b")
    with pytest.raises(ValueError, match="not a step id"):
        ref.step("1bad")
    with pytest.raises(ValueError, match="literals"):
        in_(ref.input("a"), [ref.input("b")])


def test_floats_are_refused_with_a_clear_type_error() -> None:
    with pytest.raises(TypeError, match=r"float 1\.1 is not exact; use int or Decimal"):
        TaskStep("t", queue="q", handler=Handler("h", "1"), input={"amount": 1.1})
    with pytest.raises(TypeError, match="float"):
        gt(ref.input("a"), 0.5)
    with pytest.raises(TypeError, match="float"):
        TimerStep("t", duration=1.5)  # type: ignore[arg-type]  # the point of the test
    with pytest.raises(TypeError, match="float"):
        RetryPolicy(backoff_multiplier=2.0)  # type: ignore[arg-type]  # the point of the test
    with pytest.raises(TypeError, match="float"):
        Workflow(
            "wf", version="1", input_schema={"maximum": 1.5}, failure_policy="REVIEW"
        )
    with pytest.raises(TypeError, match="float"):
        dumps({"x": 0.1})


def test_fractional_durations_are_refused_where_seconds_are_whole() -> None:
    with pytest.raises(ValueError, match="whole number of seconds"):
        TimerStep("t", duration=timedelta(milliseconds=1500))


def test_exact_numbers_survive_to_json_text() -> None:
    step = TaskStep(
        "t",
        queue="q",
        handler=Handler("h", "1"),
        input={"price": Decimal("1.10"), "big": 9007199254740993, "tiny": Decimal("1e-400")},
    )
    text = dumps(workflow(step).to_json())
    assert '"price":1.10' in text
    assert '"big":9007199254740993' in text
    assert '"tiny":1E-400' in text
    back = loads(text)
    assert back["steps"][0]["input"]["big"] == 9007199254740993
    assert back["steps"][0]["input"]["price"] == Decimal("1.10")


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda d: d.pop("steps"), "$.steps"),
        (lambda d: d.update(extra=1), "$.extra"),
        (lambda d: d.update(schema_version=2), "$.schema_version"),
        (lambda d: d["steps"][0].update(colour="red"), "$.steps[0].colour"),
        (lambda d: d["steps"][0]["handler"].pop("version"), "$.steps[0].handler.version"),
        (lambda d: d["steps"][4]["classify"].update(x=1), "$.steps[4].classify.x"),
        (lambda d: d["steps"][1]["cases"][1].update(default=False), "$.steps[1].cases[1].default"),
        (lambda d: d["steps"][2].update(branches=[]), "$.steps[2].branches"),
        (lambda d: d["steps"][0].update(queue=3), "$.steps[0].queue"),
    ],
)
def test_from_json_names_the_path_of_a_bad_field(mutate: Any, path: str) -> None:
    document = loads(DESIGN_EXAMPLE_JSON)
    mutate(document)
    with pytest.raises(DefinitionFormatError) as info:
        Workflow.from_json(document)
    assert info.value.path == path


def test_from_json_refuses_floats() -> None:
    document = loads(DESIGN_EXAMPLE_JSON)
    document["deadline_seconds"] = 86400.0
    with pytest.raises(DefinitionFormatError, match="float"):
        Workflow.from_json(document)


def test_task_trace_and_resource_keys_and_poll_needs_review_round_trip() -> None:
    from weave_sdk import Classify, Handler, Workflow, ref, validate

    wf = Workflow("keys", version="1")
    wf.task(
        "charge",
        queue="q",
        handler=Handler("charge", "1"),
        trace_key=ref.input("order_id"),
        resource_key="account-7",
    )
    wf.poll(
        "status",
        queue="q",
        handler=Handler("status", "1"),
        max_rounds=3,
        interval=10,
        deadline=60,
        classify=Classify("s", pending=["P"], succeeded=["D"], failed=["F"], needs_review=["?"]),
    )
    doc = wf.to_json()
    assert doc["steps"][0]["trace_key"] == {"$ref": "input.order_id"}
    assert doc["steps"][0]["resource_key"] == "account-7"
    assert doc["steps"][1]["classify"]["needs_review"] == ["?"]
    assert Workflow.from_json(doc).to_json() == doc
    assert validate(doc) == []
