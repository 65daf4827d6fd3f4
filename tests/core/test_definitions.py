"""Definition validation: one bad definition per code, every problem at once, canonical form."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from tests.waits.helpers import poll_step
from weave_core.definitions.format import PROBLEM_CODES, ValidatedDefinition, validate_definition
from weave_core.foundation import exactjson
from weave_core.foundation.errors import Problem, ValidationError
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_core.plugins.nodespec import CheckContext, NodeKind, hookimpl

DOCS = Path(__file__).resolve().parents[2] / "docs"

# The codes the SDK's local validator reports for the rules it shares with the server.
SDK_SHARED_CODES = {
    "duplicate_step_id",
    "ref_invalid",
    "ref_unknown_step",
    "ref_forward",
    "ref_cross_branch",
    "ref_not_guaranteed",
    "branch_not_exhaustive",
    "branch_unreachable_case",
    "parallel_empty",
    "parallel_too_wide",
    "poll_budget_too_large",
    "condition_invalid",
    "invalid_field",
}


class _EmptyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost.from_entry_points()


def ref(text: str) -> dict[str, str]:
    return {"$ref": text}


def task(step_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": step_id,
        "kind": "task",
        "queue": "q",
        "handler": {"name": "h", "version": "1"},
        **fields,
    }


def branch(step_id: str, *cases: dict[str, Any]) -> dict[str, Any]:
    return {"id": step_id, "kind": "branch", "cases": list(cases)}


def parallel(step_id: str, **branches: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": step_id, "kind": "parallel", "branches": branches}


def poll(step_id: str, **fields: Any) -> dict[str, Any]:
    base = {
        "id": step_id,
        "kind": "poll",
        "queue": "q",
        "handler": {"name": "status", "version": "1"},
        "max_rounds": 10,
        "interval_seconds": 5,
        "deadline_seconds": 600,
        "attempts_per_round": 2,
        "classify": {"field": "status", "succeeded": ["DONE"]},
    }
    base.update(fields)
    return base


def definition(*steps: dict[str, Any], **top: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema_version": 1,
        "definition_id": "d",
        "version": "1",
        "input_schema": {
            "type": "object",
            "properties": {
                "n": {"type": "number"},
                "s": {"type": "string"},
                "flag": {"type": "boolean"},
                "color": {"enum": ["red", "green"]},
            },
            "additionalProperties": False,
        },
        "steps": list(steps) or [task("a")],
    }
    doc.update(top)
    return doc


def problems_of(doc: Any, host: PluginHost, limits: Limits | None = None) -> list[Problem]:
    with pytest.raises(ValidationError) as caught:
        validate_definition(doc, host, limits or Limits())
    assert caught.value.problems, "a ValidationError must list its problems"
    return caught.value.problems


def _without(key: str) -> dict[str, Any]:
    doc = definition()
    del doc[key]
    return doc


def _with(mutate: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    doc = definition()
    mutate(doc)
    return doc


# (code, path, document, limits)
CASES: list[tuple[str, str, Any, Limits | None]] = [
    ("schema_version_unsupported", "$.schema_version", definition(schema_version=2), None),
    ("missing_field", "$.definition_id", _without("definition_id"), None),
    (
        "missing_field",
        "$.steps[0].queue",
        definition({"id": "a", "kind": "task", "handler": {"name": "h", "version": "1"}}),
        None,
    ),
    ("invalid_field", "$.failure_policy", definition(failure_policy="NEVER"), None),
    (
        "invalid_field",
        "$.steps[0].seconds",
        definition({"id": "t", "kind": "timer", "seconds": Decimal("1.5")}),
        None,
    ),
    (
        "invalid_field",
        "$.steps[0].classify.failed[0]",
        definition(
            poll("p", classify={"field": "status", "succeeded": ["DONE"], "failed": ["DONE"]})
        ),
        None,
    ),
    ("unknown_field", "$.colour", definition(colour="red"), None),
    ("unknown_field", "$.steps[0].retries", definition(task("a", retries=3)), None),
    ("invalid_id", "$.steps[0].id", definition(task("bad id")), None),
    ("invalid_id", "$.version", definition(version="latest"), None),
    (
        "duplicate_step_id",
        "$.steps[1].branches.x[0].id",
        definition(task("a"), parallel("p", x=[task("a")])),
        None,
    ),
    ("unknown_kind", "$.steps[0].kind", definition({"id": "a", "kind": "teleport"}), None),
    ("input_schema_invalid", "$.input_schema.type", definition(input_schema={"type": 5}), None),
    (
        "output_schema_invalid",
        "$.steps[0].output_schema.type",
        definition(task("a", output_schema={"type": "nonsense"})),
        None,
    ),
    (
        "ref_invalid",
        "$.steps[0].input.x",
        definition(task("a", input={"x": ref("env.HOME")})),
        None,
    ),
    (
        "ref_unknown_step",
        "$.steps[0].input.x",
        definition(task("a", input={"x": ref("steps.zz.output")})),
        None,
    ),
    (
        "ref_forward",
        "$.steps[0].input.x",
        definition(task("a", input={"x": ref("steps.b.output")}), task("b")),
        None,
    ),
    (
        "ref_forward",
        "$.steps[0].input.x",
        definition(task("a", input={"x": ref("steps.a.output")})),
        None,
    ),
    (
        "ref_cross_branch",
        "$.steps[0].branches.y[0].input.x",
        definition(parallel("p", x=[task("a")], y=[task("b", input={"x": ref("steps.a.output")})])),
        None,
    ),
    (
        "ref_not_guaranteed",
        "$.steps[1].input.x",
        definition(
            branch(
                "b",
                {"when": {"eq": [ref("input.flag"), True]}, "steps": [task("inner")]},
                {"default": True, "steps": []},
            ),
            task("after", input={"x": ref("steps.inner.output")}),
        ),
        None,
    ),
    (
        "ref_unknown_field",
        "$.steps[0].input.x",
        definition(task("a", input={"x": ref("input.missing")})),
        None,
    ),
    (
        "ref_type_mismatch",
        "$.steps[0].cases[0].when.gt[0]",
        definition(
            branch(
                "b",
                {"when": {"gt": [ref("input.s"), 1]}, "steps": []},
                {"default": True, "steps": []},
            )
        ),
        None,
    ),
    (
        "condition_invalid",
        "$.steps[0].cases[0].when",
        definition(
            branch(
                "b", {"when": {"xor": [True, False]}, "steps": []}, {"default": True, "steps": []}
            )
        ),
        None,
    ),
    ("branch_empty", "$.steps[0].cases", definition(branch("b")), None),
    (
        "branch_not_exhaustive",
        "$.steps[0].cases",
        definition(branch("b", {"when": {"gt": [ref("input.n"), 1]}, "steps": []})),
        None,
    ),
    (
        "branch_unreachable_case",
        "$.steps[0].cases[1]",
        definition(
            branch(
                "b",
                {"default": True, "steps": []},
                {"when": {"gt": [ref("input.n"), 1]}, "steps": []},
            )
        ),
        None,
    ),
    (
        "branch_unreachable_case",
        "$.steps[0].cases[0].when",
        definition(
            branch("b", {"when": {"eq": [1, 2]}, "steps": []}, {"default": True, "steps": []})
        ),
        None,
    ),
    ("parallel_empty", "$.steps[0].branches", definition(parallel("p")), None),
    ("parallel_empty", "$.steps[0].branches.x", definition(parallel("p", x=[])), None),
    (
        "parallel_too_wide",
        "$.steps[0].branches",
        definition(parallel("p", x=[task("a")], y=[task("b")], z=[task("c")])),
        Limits(max_parallel_width=2),
    ),
    (
        "poll_budget_too_large",
        "$.steps[0]",
        definition(poll("p", max_rounds=1000, attempts_per_round=11)),
        None,
    ),
    (
        "poll_budget_too_large",
        "$.steps[0].max_rounds",
        definition(poll("p", max_rounds=1001)),
        None,
    ),
    ("too_many_steps", "$.steps", definition(task("a"), task("b"), task("c")), Limits(max_steps=2)),
    (
        "nesting_too_deep",
        "$.steps[0].branches.x[0]",
        definition(parallel("p", x=[task("a")])),
        Limits(max_nesting=1),
    ),
    (
        "value_too_large",
        "$.steps[0].input",
        definition(task("a", input={"blob": "x" * 200})),
        Limits(max_value_bytes=100),
    ),
    ("definition_too_large", "$", definition(), Limits(max_definition_bytes=100)),
    (
        "limit_exceeded",
        "$.steps[0].retry.max_attempts",
        definition(task("a", retry={"max_attempts": 101})),
        None,
    ),
    ("limit_exceeded", "$.limits.max_steps", definition(limits={"max_steps": 10**6}), None),
    # wait durations (issue 6): a timer, a signal's timeout, a poll's deadline
    ("limit_exceeded", "$.steps[0].seconds",
     definition({"id": "t", "kind": "timer", "seconds": 10**9}), None),
    ("limit_exceeded", "$.steps[0].timeout_seconds",
     definition({"id": "s", "kind": "signal", "name": "go", "correlation_key": "k",
                 "timeout_seconds": 10**9}), None),
    ("limit_exceeded", "$.steps[0].deadline_seconds",
     definition(poll_step(deadline=10**9, interval=30)), None),
]


@pytest.mark.parametrize(
    ("code", "path", "doc", "limits"), CASES, ids=[f"{c[0]}@{c[1]}" for c in CASES]
)
def test_each_code_has_a_bad_definition(
    code: str, path: str, doc: Any, limits: Limits | None, host: PluginHost
) -> None:
    found = problems_of(doc, host, limits)
    assert (path, code) in [(p.path, p.code) for p in found], found
    assert all(p.code in PROBLEM_CODES for p in found)
    assert all(p.message for p in found)


# Codes that need a special plugin host, each with a test of its own below.
HOST_CODES = {"plugin_failed"}


def test_the_table_covers_every_code() -> None:
    assert {case[0] for case in CASES} | HOST_CODES == set(PROBLEM_CODES)


class _BrokenCheckKind(NodeKind):
    """A third-party kind whose check() has a bug."""

    kind = "broken_check"
    config_model = _EmptyConfig

    def check(self, config: BaseModel, ctx: CheckContext) -> None:
        raise KeyError("oops")


class _BrokenPlugin:
    @hookimpl
    def weave_register_node_kinds(self) -> list[type[NodeKind]]:
        return [_BrokenCheckKind]


def test_a_plugin_that_raises_is_a_problem_not_a_crash() -> None:
    host = PluginHost.from_entry_points(extra_plugins=[_BrokenPlugin()])
    found = problems_of(definition({"id": "b", "kind": "broken_check"}), host, None)
    assert [(p.path, p.code) for p in found] == [("$.steps[0]", "plugin_failed")]
    assert "broken_check" in found[0].message and "KeyError" in found[0].message


def test_sdk_shared_codes_are_server_codes() -> None:
    assert SDK_SHARED_CODES <= set(PROBLEM_CODES)


def test_every_problem_is_reported_at_once(host: PluginHost) -> None:
    doc = definition(
        task("a", input={"x": ref("steps.nowhere.output")}),
        task("a"),
        {"id": "t", "kind": "timer", "seconds": 0},
        failure_policy="SOMETIMES",
    )
    found = {(p.path, p.code) for p in problems_of(doc, host)}
    assert found == {
        ("$.failure_policy", "invalid_field"),
        ("$.steps[0].input.x", "ref_unknown_step"),
        ("$.steps[1].id", "duplicate_step_id"),
        ("$.steps[2].seconds", "invalid_field"),
    }


def _doc_example() -> Any:
    text = (DOCS / "definitions.md").read_text("utf-8")
    match = re.search(r"<!-- example: external-job -->\s*```json\n(.*?)```", text, re.S)
    assert match, "docs/definitions.md must hold the full example after its marker"
    return exactjson.loads(match.group(1))


def test_the_documented_example_is_valid(host: PluginHost) -> None:
    doc = _doc_example()
    validated = validate_definition(doc, host, Limits())
    assert isinstance(validated, ValidatedDefinition)
    assert [s.id for s in validated.walk()] == [
        "validate",
        "route",
        "approval",
        "prepare",
        "fetch_docs",
        "quote",
        "submit",
        "outcome",
    ]
    route = validated.step("route")
    assert [b.name for b in route.blocks] == ["case0", "case1"]
    assert route.blocks[0].path == "$.steps[1].cases[0].steps"
    prepare = validated.step("prepare")
    assert [b.name for b in prepare.blocks] == ["docs", "quote"]
    assert prepare.output_schema is not None
    assert prepare.output_schema["required"] == ["docs", "quote"]
    assert validated.failure_policy == "REVIEW"
    assert validated.deadline_seconds == 86400


def test_the_documented_example_matches_the_shipped_file(host: PluginHost) -> None:
    shipped = exactjson.loads((DOCS / "examples" / "external_job.json").read_bytes())
    assert shipped == _doc_example()


def test_every_code_is_documented() -> None:
    text = (DOCS / "definitions.md").read_text("utf-8")
    missing = [code for code in PROBLEM_CODES if f"`{code}`" not in text]
    assert not missing


def test_canonical_form_and_hash_ignore_key_order_and_number_spelling(host: PluginHost) -> None:
    one = exactjson.loads(
        b'{"schema_version": 1, "definition_id": "d", "version": "1", "deadline_seconds": 1E+2,'
        b' "steps": [{"id": "a", "kind": "task", "queue": "q",'
        b' "handler": {"version": "1", "name": "h"}, "input": {"k": 1.50},'
        b' "retry": {"backoff_multiplier": 1.50}}]}'
    )
    two = exactjson.loads(
        b'{"steps": [{"retry": {"backoff_multiplier": 1.5}, "input": {"k": 1.5},'
        b' "handler": {"name": "h", "version": "1"}, "queue": "q", "kind": "task", "id": "a"}],'
        b' "version": "1", "deadline_seconds": 100, "definition_id": "d", "schema_version": 1}'
    )
    a, b = validate_definition(one, host, Limits()), validate_definition(two, host, Limits())
    assert a.content_hash == b.content_hash
    assert exactjson.dumps(a.document) == exactjson.dumps(b.document)
    assert a.document["deadline_seconds"] == 100
    # nothing is filled in: no idempotent, retry defaults, input_schema or failure_policy
    assert "idempotent" not in a.document["steps"][0]["handler"]
    assert "failure_policy" not in a.document
    assert a.document["steps"][0]["retry"] == {"backoff_multiplier": Decimal("1.5")}


def test_a_different_number_changes_the_hash(host: PluginHost) -> None:
    a = validate_definition(definition(task("a", input={"k": 9007199254740993})), host, Limits())
    b = validate_definition(definition(task("a", input={"k": 9007199254740992})), host, Limits())
    assert a.content_hash != b.content_hash
    assert a.document["steps"][0]["input"]["k"] == 9007199254740993


def test_floats_are_refused(host: PluginHost) -> None:
    found = problems_of(definition(task("a", input={"k": 1.5})), host)
    assert [(p.path, p.code) for p in found] == [("$", "invalid_field")]


def test_a_non_object_document_is_refused(host: PluginHost) -> None:
    assert [p.code for p in problems_of([1, 2], host)] == ["invalid_field"]


# --- scopes ------------------------------------------------------------------------------


def test_scope_rules_that_are_accepted(host: PluginHost) -> None:
    doc = definition(
        task("first", output_schema={"type": "object", "properties": {"k": {"type": "string"}}}),
        parallel(
            "p",
            x=[
                task("x1", input={"v": ref("steps.first.output.k")}),
                task("x2", input={"v": ref("steps.x1.output")}),
            ],
            y=[task("y1", input={"v": ref("input.n")})],
        ),
        branch(
            "b",
            {
                "when": {"exists": ref("steps.x2.output.anything")},
                "steps": [task("in_case", input={"v": ref("steps.p.output.x")})],
            },
            {"default": True, "steps": []},
        ),
        task("last", input={"x2": ref("steps.x2.output"), "p": ref("steps.p.output.y")}),
        branch(
            "b2",
            {"when": {"exists": ref("steps.in_case.output")}, "steps": []},
            {"default": True, "steps": []},
        ),
    )
    validate_definition(doc, host, Limits())


@pytest.mark.parametrize(
    ("reference", "code"),
    [
        ("steps.p.output.z", "ref_unknown_field"),
        ("steps.p.output", None),
        ("steps.x1.output", "ref_cross_branch"),  # a sibling branch's step, from branch y
        ("steps.p.output.x", "ref_forward"),  # the enclosing composite itself
        ("steps.t.output.k", "ref_unknown_field"),  # a timer's output is null
        ("input.s.length", "ref_unknown_field"),  # a string has no fields
    ],
)
def test_reference_relations(reference: str, code: str | None, host: PluginHost) -> None:
    doc = definition(
        {"id": "t", "kind": "timer", "seconds": 5},
        parallel("p", x=[task("x1")], y=[task("y1")]),
        task("probe", input={"v": ref(reference)}),
    )
    if reference in ("steps.x1.output", "steps.p.output.x"):
        doc["steps"][1]["branches"]["y"][0]["input"] = {"v": ref(reference)}
        doc["steps"][2]["input"] = {}
    if code is None:
        validate_definition(doc, host, Limits())
    else:
        assert code in [p.code for p in problems_of(doc, host)]


def test_a_poll_receipt_key_must_be_a_string(host: PluginHost) -> None:
    doc = definition(poll("p", receipt={"name": "receipt", "correlation_key": ref("input.n")}))
    found = problems_of(doc, host)
    assert [(p.path, p.code) for p in found] == [
        ("$.steps[0].receipt.correlation_key", "ref_type_mismatch")
    ]


# --- branch exhaustiveness -----------------------------------------------------------------


@pytest.mark.parametrize(
    "cases",
    [
        [
            {"when": {"eq": [ref("input.flag"), True]}, "steps": []},
            {"when": {"eq": [False, ref("input.flag")]}, "steps": []},
        ],
        [
            {"when": {"in": [ref("input.color"), ["red"]]}, "steps": []},
            {"when": {"eq": [ref("input.color"), "green"]}, "steps": []},
        ],
        [{"when": {"gt": [ref("input.n"), 1]}, "steps": []}, {"when": True, "steps": []}],
        [{"default": True, "steps": [task("only")]}],
    ],
    ids=["boolean", "enum", "literal-true", "default-only"],
)
def test_provably_total_branches(cases: list[dict[str, Any]], host: PluginHost) -> None:
    validate_definition(definition(branch("b", *cases)), host, Limits())


def test_a_case_already_covered_is_unreachable(host: PluginHost) -> None:
    doc = definition(
        branch(
            "b",
            {"when": {"in": [ref("input.color"), ["red", "green"]]}, "steps": []},
            {"when": {"eq": [ref("input.color"), "red"]}, "steps": []},
        )
    )
    assert [(p.path, p.code) for p in problems_of(doc, host)] == [
        ("$.steps[0].cases[1]", "branch_unreachable_case")
    ]


def test_definition_limits_tighten_engine_limits(host: PluginHost) -> None:
    doc = definition(task("a"), task("b"), limits={"max_steps": 1})
    assert ("$.steps", "too_many_steps") in [(p.path, p.code) for p in problems_of(doc, host)]
    ok = validate_definition(definition(limits={"max_task_attempts": 5}), host, Limits())
    assert ok.limits["max_task_attempts"] == 5


def test_the_input_document_is_not_modified(host: PluginHost) -> None:
    doc = definition(task("a", input={"k": Decimal("1.10")}))
    before = copy.deepcopy(doc)
    validate_definition(doc, host, Limits())
    assert doc == before and str(doc["steps"][0]["input"]["k"]) == "1.10"
