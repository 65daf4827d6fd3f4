"""Local validation: one table case (at least) per problem code, exact paths and codes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.sdk.design_example import DESIGN_EXAMPLE_JSON, build_external_job
from weave_sdk import PROBLEM_CODES, loads, validate

Doc = dict[str, Any]


def example() -> Doc:
    document: Doc = loads(DESIGN_EXAMPLE_JSON)
    return document


def task(step_id: str, inp: Any = None) -> Doc:
    return {
        "id": step_id,
        "kind": "task",
        "queue": "q",
        "handler": {"name": "h", "version": "1"},
        "input": {} if inp is None else inp,
    }


def doc(*steps: Doc) -> Doc:
    return {
        "schema_version": 1,
        "definition_id": "wf",
        "version": "1",
        "input_schema": {"type": "object"},
        "failure_policy": "REVIEW",
        "steps": list(steps),
    }


def r(text: str) -> Doc:
    return {"$ref": text}


def branch(step_id: str, *cases: Doc) -> Doc:
    return {"id": step_id, "kind": "branch", "cases": list(cases)}


def case(when: Any, *steps: Doc) -> Doc:
    return {"when": when, "steps": list(steps)}


def default(*steps: Doc) -> Doc:
    return {"default": True, "steps": list(steps)}


def parallel(step_id: str, **branches: list[Doc]) -> Doc:
    return {"id": step_id, "kind": "parallel", "branches": branches}


def edit(change: Callable[[Doc], Any]) -> Doc:
    document = example()
    change(document)
    return document


POLL = 4  # index of the poll step in the example
CASES: list[tuple[str, Doc, set[tuple[str, str]]]] = [
    # --- document and fields
    (
        "schema_version",
        edit(lambda d: d.update(schema_version=2)),
        {("$.schema_version", "schema_version_unsupported")},
    ),
    (
        "schema_version of another type, nothing else checked",
        {"schema_version": "1", "colour": 1},
        {("$.schema_version", "schema_version_unsupported")},
    ),
    (
        "missing top-level fields",
        edit(lambda d: [d.pop("version"), d.pop("steps"), d.pop("schema_version")]),
        {
            ("$.version", "missing_field"),
            ("$.steps", "missing_field"),
            ("$.schema_version", "missing_field"),
        },
    ),
    ("empty steps", doc(), {("$.steps", "invalid_field")}),
    (
        "missing step fields",
        doc({"id": "t", "kind": "task", "handler": {"name": "h"}}, {"kind": "timer", "seconds": 1}),
        {
            ("$.steps[0].queue", "missing_field"),
            ("$.steps[0].handler.version", "missing_field"),
            ("$.steps[1].id", "missing_field"),
        },
    ),
    ("missing kind", doc({"id": "t"}), {("$.steps[0].kind", "missing_field")}),
    (
        "unknown fields",
        edit(lambda d: [d.update(colour=1), d["steps"][0].update(colour=1)]),
        {("$.colour", "unknown_field"), ("$.steps[0].colour", "unknown_field")},
    ),
    (
        "failure_policy value",
        edit(lambda d: d.update(failure_policy="NEVER")),
        {("$.failure_policy", "invalid_field")},
    ),
    (
        "bad counts and durations",
        edit(
            lambda d: d["steps"][POLL].update(max_rounds=0, interval_seconds=True)
            or d.update(deadline_seconds=-1)
        ),
        {
            ("$.steps[4].max_rounds", "invalid_field"),
            ("$.steps[4].interval_seconds", "invalid_field"),
            ("$.deadline_seconds", "invalid_field"),
        },
    ),
    (
        "classify overlap",
        edit(lambda d: d["steps"][POLL]["classify"].update(failed=["DONE"])),
        {("$.steps[4].classify.failed[0]", "invalid_field")},
    ),
    (
        "classify value types",
        edit(lambda d: d["steps"][POLL]["classify"].update(pending=["A", {"x": 1}])),
        {("$.steps[4].classify.pending[1]", "invalid_field")},
    ),
    (
        "retry and timeouts",
        doc(
            {
                **task("t"),
                "retry": {"max_attempts": 0, "jitter": 1},
                "timeouts": {"heartbeat": 0},
            }
        ),
        {
            ("$.steps[0].retry.max_attempts", "invalid_field"),
            ("$.steps[0].retry.jitter", "unknown_field"),
            ("$.steps[0].timeouts.heartbeat", "invalid_field"),
        },
    ),
    (
        "retry backoff",
        doc(
            {**task("a"), "retry": {"backoff_multiplier": 0}},
            {**task("b"), "retry": {"backoff_seconds": 10, "max_backoff_seconds": 5}},
        ),
        {
            ("$.steps[0].retry.backoff_multiplier", "invalid_field"),
            ("$.steps[1].retry.max_backoff_seconds", "invalid_field"),
        },
    ),
    (
        "ids",
        edit(
            lambda d: [
                d.update(definition_id="-job", version="v" * 129),
                d["steps"][0].update(id="1validate"),
                d["steps"][3].update(id="s" * 65),
            ]
        ),
        {
            ("$.definition_id", "invalid_id"),
            ("$.version", "invalid_id"),
            ("$.steps[0].id", "invalid_id"),
            ("$.steps[3].id", "invalid_id"),
        },
    ),
    ("reserved version", edit(lambda d: d.update(version="latest")), {("$.version", "invalid_id")}),
    (
        "schemas are objects",
        edit(lambda d: d.update(input_schema=[]) or d["steps"][0].update(output_schema="x")),
        {
            ("$.input_schema", "input_schema_invalid"),
            ("$.steps[0].output_schema", "invalid_field"),
        },
    ),
    (
        "engine limits",
        doc(
            {**task("t"), "retry": {"max_attempts": 101}},
            {"id": "w", "kind": "timer", "seconds": 366 * 86400 + 1},
            branch("b", *[case(False) for _ in range(32)], default()),
        )
        | {"deadline_seconds": 10**9},
        {
            ("$.deadline_seconds", "limit_exceeded"),
            ("$.steps[0].retry.max_attempts", "limit_exceeded"),
            ("$.steps[1].seconds", "limit_exceeded"),
            ("$.steps[2].cases", "limit_exceeded"),
        }
        | {(f"$.steps[2].cases[{i}].when", "branch_unreachable_case") for i in range(32)},
    ),
    (
        "poll interval and receipt key",
        edit(
            lambda d: [
                d["steps"][POLL].update(interval_seconds=7200),
                d["steps"][POLL]["receipt"].update(correlation_key=""),
            ]
        ),
        {
            ("$.steps[4].interval_seconds", "invalid_field"),
            ("$.steps[4].receipt.correlation_key", "invalid_field"),
        },
    ),
    (
        "nothing can succeed",
        edit(lambda d: d["steps"][POLL]["classify"].update(succeeded=[])),
        {("$.steps[4].classify.succeeded", "invalid_field")},
    ),
    (
        "duplicate step id across nesting",
        edit(lambda d: d["steps"][2]["branches"]["docs"][0].update(id="validate")),
        {("$.steps[2].branches.docs[0].id", "duplicate_step_id")},
    ),
    # --- references
    (
        "ref syntax",
        doc(
            task(
                "t",
                {
                    "a": r("inputs.x"),
                    "b": r("steps.x.result"),
                    "c": {"$ref": "input.x", "d": 1},
                    "e": r("input.a b"),
                    "f": {"$ref": 7},
                    "g": [r("steps.1x.output")],
                },
            )
        ),
        {
            ("$.steps[0].input.a", "ref_invalid"),
            ("$.steps[0].input.b", "ref_invalid"),
            ("$.steps[0].input.c", "ref_invalid"),
            ("$.steps[0].input.e", "ref_invalid"),
            ("$.steps[0].input.f", "ref_invalid"),
            ("$.steps[0].input.g[0]", "ref_invalid"),
        },
    ),
    (
        "ref to an unknown step",
        doc(task("t", {"x": r("steps.nope.output")})),
        {("$.steps[0].input.x", "ref_unknown_step")},
    ),
    (
        "ref to self, to a later step, to a child, to the enclosing step",
        doc(
            task("a", {"self": r("steps.a.output"), "later": r("steps.b.output.x")}),
            branch(
                "b",
                case({"exists": r("steps.c.output")}, task("c", {"up": r("steps.b.output")})),
                default(),
            ),
        ),
        {
            ("$.steps[0].input.self", "ref_forward"),
            ("$.steps[0].input.later", "ref_forward"),
            ("$.steps[1].cases[0].when.exists", "ref_forward"),
            ("$.steps[1].cases[0].steps[0].input.up", "ref_forward"),
        },
    ),
    (
        "ref across parallel branches",
        edit(
            lambda d: d["steps"][2]["branches"]["quote"][0].update(
                input={"docs": r("steps.fetch_docs.output")}
            )
        ),
        {("$.steps[2].branches.quote[0].input.docs", "ref_cross_branch")},
    ),
    (
        "ref into a branch case from after the branch",
        edit(lambda d: d["steps"][3]["input"].update(approved=r("steps.approval.output.ok"))),
        {("$.steps[3].input.approved", "ref_not_guaranteed")},
    ),
    (
        "ref into another case of the same branch",
        doc(
            branch(
                "b",
                case({"exists": r("input.a")}, task("x")),
                default(task("y", {"x": r("steps.x.output")})),
            )
        ),
        {("$.steps[0].cases[1].steps[0].input.x", "ref_cross_branch")},
    ),
    # --- composites
    (
        "branch without default",
        edit(lambda d: d["steps"][1]["cases"].pop()),
        {("$.steps[1].cases", "branch_not_exhaustive")},
    ),
    ("branch without cases", doc(branch("b")), {("$.steps[0].cases", "branch_empty")}),
    (
        "case after the default",
        edit(lambda d: d["steps"][1]["cases"].append(case(True))),
        {("$.steps[1].cases[2]", "branch_unreachable_case")},
    ),
    (
        "empty parallel",
        edit(lambda d: d["steps"][2].update(branches={}) or d["steps"][3].update(input={})),
        {("$.steps[2].branches", "parallel_empty")},
    ),
    (
        "parallel branch without steps",
        edit(lambda d: d["steps"][2]["branches"].update(docs=[])),
        {("$.steps[2].branches.docs", "parallel_empty")},
    ),
    (
        "parallel too wide",
        doc(parallel("p", **{f"b{i}": [task(f"s{i}")] for i in range(33)})),
        {("$.steps[0].branches", "parallel_too_wide")},
    ),
    (
        "poll budget",
        edit(lambda d: d["steps"][POLL].update(max_rounds=1000, attempts_per_round=11)),
        {("$.steps[4]", "poll_budget_too_large")},
    ),
    (
        "poll rounds",
        edit(lambda d: d["steps"][POLL].update(max_rounds=1001, attempts_per_round=1)),
        {("$.steps[4].max_rounds", "poll_budget_too_large")},
    ),
    # --- conditions
    (
        "condition vocabulary and arity",
        doc(
            branch(
                "b",
                case({"xor": [1, 2]}),
                case({"gt": [1]}),
                case({"in": [r("input.a"), "x"]}),
                case({"exists": "input.a"}),
                case({"and": []}),
                case({"lt": [{"a": 1}, 1]}),
                case({"eq": [1, 2], "ne": [1, 2]}),
                case({"in": [r("input.a"), [r("input.b")]]}),
                case({"not": {"or": [{"ge": [r("inputs"), 1]}]}}),
                default(),
            )
        ),
        {
            ("$.steps[0].cases[0].when", "condition_invalid"),
            ("$.steps[0].cases[1].when.gt", "condition_invalid"),
            ("$.steps[0].cases[2].when.in", "condition_invalid"),
            ("$.steps[0].cases[3].when.exists", "condition_invalid"),
            ("$.steps[0].cases[4].when.and", "condition_invalid"),
            ("$.steps[0].cases[5].when.lt[0]", "condition_invalid"),
            ("$.steps[0].cases[6].when", "condition_invalid"),
            ("$.steps[0].cases[7].when.in[1][0]", "condition_invalid"),
            ("$.steps[0].cases[8].when.not.or[0].ge[0]", "ref_invalid"),
        },
    ),
]


@pytest.mark.parametrize(
    ("document", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_problem_table(document: Doc, expected: set[tuple[str, str]]) -> None:
    found = {(p.path, p.code) for p in validate(document)}
    assert found == expected


def test_every_code_has_a_table_case() -> None:
    covered = {code for _, _, expected in CASES for _, code in expected}
    assert covered == set(PROBLEM_CODES)


def test_every_code_is_documented() -> None:
    assert all(isinstance(doc, str) and doc for doc in PROBLEM_CODES.values())


@pytest.mark.parametrize(
    "document",
    [
        example(),
        # a reference after a branch is fine under exists (the DESIGN.md exception)
        edit(
            lambda d: d["steps"].append(
                branch(
                    "late",
                    case({"exists": r("steps.approval.output")}),
                    case({"not": {"exists": r("steps.approval.output")}}),
                    default(),
                )
            )
        ),
        # the optional fields may all be left out
        {
            "schema_version": 1,
            "definition_id": "a.b-c_1",
            "version": "2024.1",
            "steps": [
                {"id": "t", "kind": "task", "queue": "q", "handler": {"name": "h", "version": "1"}}
            ],
        },
        doc(branch("b", case(True))),
        # a reference into a parallel branch after the join, and within one branch
        doc(
            parallel("p", a=[task("a1"), task("a2", {"x": r("steps.a1.output")})], b=[task("b1")]),
            task("after", {"a": r("steps.a2.output.x"), "p": r("steps.p.output.b")}),
        ),
        # a step inside a case reads an earlier step of its own case and the outer ones
        doc(
            task("first"),
            branch(
                "b",
                case(
                    {"eq": [r("steps.first.output.k"), "v"]},
                    task("c1", {"f": r("steps.first.output")}),
                    task("c2", {"c1": r("steps.c1.output")}),
                ),
                default(),
            ),
        ),
    ],
    ids=["design-example", "exists-after-branch", "minimal", "true-case", "parallel", "case"],
)
def test_valid_definitions_have_no_problems(document: Doc) -> None:
    assert validate(document) == []


def test_third_party_kinds_pass_through() -> None:
    document = doc(
        {"id": "w", "kind": "acme.wait", "anything": [1, {"x": 2}], "inner": [task("nested")]},
        task("t", {"n": r("steps.nested.output"), "w": r("steps.w.output")}),
    )
    assert validate(document) == []


def test_workflow_objects_are_validated_too() -> None:
    assert validate(build_external_job()) == []
    assert build_external_job().validate() == []


def test_not_an_object() -> None:
    assert [(p.path, p.code) for p in validate([])] == [("$", "invalid_field")]  # type: ignore[arg-type]  # the point of the test
