"""The SDK's local validation against the engine's table: the same codes at the same paths.

Every bad definition of ``tests/core/test_definitions.CASES`` goes through both. Where the
SDK cannot check a rule by design, the code (or the case) is listed below with the reason,
and the SDK must then report nothing for it: a gap is stated, never skipped in silence.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.test_definitions import CASES, HOST_CODES
from weave_core.definitions.format import PROBLEM_CODES, validate_definition
from weave_core.foundation.errors import ValidationError
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_sdk import PROBLEM_CODES as SDK_PROBLEM_CODES
from weave_sdk import validate

NOT_LOCAL: dict[str, str] = {
    "unknown_kind": "the SDK passes kinds it does not know through: a third-party kind may "
    "be installed on the server",
    "plugin_failed": "only a node plugin installed on the server can fail while checking",
    "output_schema_invalid": "the SDK checks that output_schema is an object; the metaschema "
    "check of a kind's fields is the node plugin's",
    "ref_unknown_field": "needs the output schemas the node plugins compute for each kind",
    "ref_type_mismatch": "needs the output schemas the node plugins compute for each kind",
    "too_many_steps": "a size limit of the server's configuration, not in the SDK's code table",
    "nesting_too_deep": "a size limit of the server's configuration, not in the SDK's code table",
    "value_too_large": "a size limit of the server's configuration, not in the SDK's code table",
    "definition_too_large": "a size limit of the server's configuration, not in the SDK's "
    "code table",
}
"""Engine codes the SDK does not report, each with why."""

NOT_LOCAL_CASES: dict[str, str] = {
    "branch_unreachable_case@$.steps[0].cases[0].when": "the server folds a constant "
    "condition ({'eq': [1, 2]}) to false; the SDK flags only a literal false",
}
"""Cases of a code the SDK does check, in a form it does not, each with why."""


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost.from_entry_points()


def engine_problems(doc: Any, host: PluginHost) -> set[tuple[str, str]]:
    """What the server reports under its default limits (the SDK knows no others)."""
    try:
        validate_definition(doc, host, Limits())
    except ValidationError as exc:
        return {(p.path, p.code) for p in exc.problems}
    return set()


@pytest.mark.parametrize(
    ("code", "path", "doc", "limits"), CASES, ids=[f"{c[0]}@{c[1]}" for c in CASES]
)
def test_the_sdk_reports_what_the_engine_reports(
    code: str, path: str, doc: Any, limits: Limits | None, host: PluginHost
) -> None:
    case = f"{code}@{path}"
    local = {(p.path, p.code) for p in validate(doc)}
    expected = {(w, c) for w, c in engine_problems(doc, host) if c not in NOT_LOCAL}
    if case in NOT_LOCAL_CASES:
        expected.discard((path, code))
    assert local == expected
    if limits is None and code not in NOT_LOCAL and case not in NOT_LOCAL_CASES:
        assert (path, code) in local  # the case's own rule, checked locally


def test_every_engine_code_is_local_or_listed() -> None:
    assert set(SDK_PROBLEM_CODES) | set(NOT_LOCAL) == set(PROBLEM_CODES)
    assert not set(SDK_PROBLEM_CODES) & set(NOT_LOCAL)
    assert HOST_CODES <= set(NOT_LOCAL)
    assert all(reason for reason in [*NOT_LOCAL.values(), *NOT_LOCAL_CASES.values()])
    assert set(NOT_LOCAL_CASES) <= {f"{c[0]}@{c[1]}" for c in CASES}


def test_the_sdk_holds_definitions_to_the_engine_default_limits() -> None:
    from weave_sdk.validate import DEFAULT_LIMITS

    assert dict(DEFAULT_LIMITS) == {name: Limits().get(name) for name in DEFAULT_LIMITS}


def _doc(**top: Any) -> dict[str, Any]:
    task = {"id": "a", "kind": "task", "queue": "q", "handler": {"name": "h", "version": "1"}}
    return {"schema_version": 1, "definition_id": "d", "version": "1", "steps": [task]} | top


SHARED_RULES = [
    _doc(definition_id="-x", version="latest", colour=1, failure_policy="NEVER"),
    _doc(deadline_seconds=0, limits={"max_steps": 10**6, "bogus": 1, "max_nesting": True}),
    _doc(input_schema={"type": 5}, limits=[]),
    _doc(steps=[5, {}, {"id": "1x", "kind": "task", "queue": "q",
                        "handler": {"name": "h", "version": "1"}}]),
    _doc(steps=[{"id": "p", "kind": "parallel", "branches": {"x": [7, {"id": "p"}]}}]),
]


@pytest.mark.parametrize("doc", SHARED_RULES)
def test_the_rules_of_the_schema_give_the_same_problems(doc: Any, host: PluginHost) -> None:
    """The top level and every step's id and kind: same paths, codes and messages."""
    with pytest.raises(ValidationError) as caught:
        validate_definition(doc, host, Limits())
    engine = {(p.path, p.code, p.message) for p in caught.value.problems}
    assert {(p.path, p.code, p.message) for p in validate(doc)} == engine


def test_a_definition_s_own_limits_tighten_the_local_checks(host: PluginHost) -> None:
    doc = _doc(
        limits={"max_parallel_width": 1, "max_task_attempts": 2, "max_deadline_seconds": 60},
        steps=[
            {"id": "p", "kind": "parallel", "branches": {
                "x": [{"id": "t", "kind": "timer", "seconds": 61}],
                "y": [{"id": "u", "kind": "task", "queue": "q", "retry": {"max_attempts": 3},
                       "handler": {"name": "h", "version": "1"}}],
            }},
        ],
    )
    with pytest.raises(ValidationError) as caught:
        validate_definition(doc, host, Limits())
    engine = {(p.path, p.code) for p in caught.value.problems}
    assert {(p.path, p.code) for p in validate(doc)} == engine
    assert {c for _, c in engine} == {"parallel_too_wide", "limit_exceeded"}
