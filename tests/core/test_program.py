"""Compiling definitions into programs: immutability, sharing across threads, purity."""

from __future__ import annotations

import ast
import copy
import importlib.util
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.core.planning_kinds import (
    HOST,
    JobConfig,
    choose,
    definition,
    drive,
    fork,
    job,
    program,
    ref,
    snap,
)
from weave_core.definitions.format import validate_definition
from weave_core.foundation.errors import ValidationError
from weave_core.foundation.exactjson import content_hash, dumps
from weave_core.foundation.limits import DEFAULT_LIMITS, Limits
from weave_core.planning.program import ROOT, Program, compile
from weave_core.plugins.nodespec import TaskCommand

DOC = definition(
    job("a", {"x": ref("input.x"), "tags": ["one", "two"]}),
    choose("b", ({"gt": [ref("input.x"), 1]}, [job("big")]), (None, [job("small")])),
    fork("p", l=[job("l1")], r=[job("r1", {"from": ref("steps.a.output")})]),
)


def test_compile_reads_the_tree() -> None:
    prog = compile(DOC, HOST)
    assert prog.definition_id == "t" and prog.version == "1"
    assert prog.step_ids() == ("a", "b", "big", "small", "p", "l1", "r1")
    assert prog.kind_of("b") == "choose" and prog.is_composite("p")
    assert prog.parent_of("r1") == ("p", "r") and prog.parent_of("a") == (ROOT, "steps")
    assert dict(prog.blocks_of("b")) == {"case0": ("big",), "case1": ("small",)}
    assert prog.content_hash == content_hash(DOC)


def test_compile_refuses_an_invalid_definition_with_every_problem() -> None:
    bad = definition(job("a", {"x": ref("steps.nope.output")}), {"id": "a", "kind": "job"})
    with pytest.raises(ValidationError) as caught:
        compile(bad, HOST)
    codes = {p.code for p in caught.value.problems}
    assert {"ref_unknown_step", "duplicate_step_id"} <= codes


def test_changing_the_source_document_never_changes_the_program() -> None:
    source = copy.deepcopy(DOC)
    prog = compile(source, HOST)
    before = dumps(prog.document())
    source["steps"][0]["input"]["tags"].append("three")
    source["steps"][0]["input"]["x"] = "changed"
    source["steps"].pop()
    assert dumps(prog.document()) == before
    (decision,) = prog.plan(snap({"x": 0})).decisions
    assert isinstance(decision.command, TaskCommand)
    assert decision.command.input == {"x": 0, "tags": ["one", "two"]}


def test_changing_a_copy_taken_from_the_program_never_changes_it() -> None:
    prog = compile(DOC, HOST)
    document = prog.document()
    document["steps"][0]["input"]["tags"].clear()
    config = prog.config("a")
    assert isinstance(config, JobConfig)
    config.input["tags"].append("three")
    config.input["x"] = "changed"
    (decision,) = prog.plan(snap({"x": 0})).decisions
    assert isinstance(decision.command, TaskCommand)
    assert decision.command.input == {"x": 0, "tags": ["one", "two"]}
    # A command handed out is a fresh value too: changing it changes no later plan.
    decision.command.input["tags"].append("four")
    (again,) = prog.plan(snap({"x": 0})).decisions
    assert isinstance(again.command, TaskCommand)
    assert again.command.input == {"x": 0, "tags": ["one", "two"]}


def test_the_program_has_no_attribute_to_set() -> None:
    prog = compile(DOC, HOST)
    with pytest.raises(AttributeError):
        prog.extra = 1  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        prog.blocks_of("p")["l"] = ("x",)  # type: ignore[index]


def test_from_validated_matches_compile() -> None:
    validated = validate_definition(DOC, HOST, DEFAULT_LIMITS)
    a = Program.from_validated(validated, HOST)
    b = compile(DOC, HOST)
    assert a.content_hash == b.content_hash
    assert a.plan(snap({"x": 3})) == b.plan(snap({"x": 3}))


def test_a_definition_may_tighten_max_value_bytes() -> None:
    assert program(job("a"), limits=Limits(max_value_bytes=1000)).max_value_bytes == 1000
    prog = compile(definition(job("a"), limits={"max_value_bytes": 100}), HOST)
    assert prog.max_value_bytes == 100


def test_one_program_is_shared_by_many_threads() -> None:
    prog = compile(DOC, HOST)
    inputs = [{"x": n} for n in range(16)]

    def run(value: dict[str, int]) -> str:
        final, decisions = drive(prog, snap(value), limit=1 + value["x"] % 4)
        return dumps([final.to_json(), sorted(dumps(d.to_json()) for d in decisions)])

    alone = [run(v) for v in inputs]
    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(run, inputs * 4))
    assert together == alone * 4


# --- purity: the decision core imports nothing from storage --------------------------------

CORE_MODULES = (
    "weave_core.planning.program",
    "weave_core.planning.plan",
    "weave_core.planning.planner",
    "weave_core.planning.snapshot",
)
FORBIDDEN = (
    "weave_core.storage.db",
    "weave_core.storage.schema",
    "weave_core.storage.locks",
    "weave_core.access.identity",
    "weave_core.access.audit",
    "weave_core.storage.migrate",
    "weave_core.engine",
    "weave_core.dispatch",
    "sqlalchemy",
    "pymysql",
    "alembic",
    "time",
    "datetime",
    "random",
    "secrets",
    "socket",
    "threading",
)


def _imports_of(module: str) -> set[str]:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_the_core_imports_nothing_from_storage_even_transitively() -> None:
    seen: set[str] = set()
    pending = list(CORE_MODULES)
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        seen.add(module)
        for imported in _imports_of(module):
            assert not any(
                imported == bad or imported.startswith(bad + ".") for bad in FORBIDDEN
            ), f"{module} imports {imported}"
            if imported.startswith("weave_core"):
                pending.append(imported)
    assert {"weave_core.definitions.expressions", "weave_core.plugins.nodespec"} <= seen
