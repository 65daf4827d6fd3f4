"""Test-local node kinds and helpers for the decision-core tests.

The core must work with any kind served through the node spec without knowing its name, so
these tests use their own small kinds (``job``, ``choose``, ``fork``) registered through a
plugin host exactly as a third-party package would register them.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from weave_core.foundation.exactjson import JSON
from weave_core.foundation.limits import DEFAULT_LIMITS, Limits
from weave_core.planning.plan import Decision, DecisionKind, Plan
from weave_core.planning.program import Program, compile
from weave_core.planning.snapshot import Entered, Phase, Snapshot, StepState
from weave_core.plugins.host import PluginHost
from weave_core.plugins.nodespec import (
    CheckContext,
    Command,
    EnterBlocks,
    Fact,
    FactKind,
    NodeKind,
    Scope,
    StepOutcome,
    StepResult,
    TaskCommand,
    hookimpl,
)


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class JobConfig(_Config):
    input: Any = Field(default_factory=dict)


class JobKind(NodeKind):
    """A leaf: one task whose input is the resolved template."""

    kind = "job"
    config_model = JobConfig

    def check(self, config: BaseModel, ctx: CheckContext) -> None:
        assert isinstance(config, JobConfig)
        ctx.check_template(config.input, ".input")

    def activate(self, config: BaseModel, scope: Scope) -> Command:
        assert isinstance(config, JobConfig)
        return TaskCommand(
            queue="q", handler="h", handler_version="1", idempotent=True,
            input=scope.resolve(config.input),
        )

    def interpret(self, config: BaseModel, fact: Fact) -> StepResult:
        if fact.kind is FactKind.TASK_SUCCEEDED:
            return StepResult(StepOutcome.SUCCEEDED, fact.payload)
        return StepResult(StepOutcome.FAILED, reason="task_failed")


class Case(_Config):
    when: Any = None
    default: bool = False
    steps: list[Any]


class ChooseConfig(_Config):
    cases: list[Case]


class ChooseKind(NodeKind):
    """Policy ``one``: the first case whose condition holds (a branch)."""

    kind = "choose"
    config_model = ChooseConfig
    block_policy = "one"

    def blocks(self, config: BaseModel) -> Mapping[str, Sequence[JSON]]:
        assert isinstance(config, ChooseConfig)
        return {f"case{i}": case.steps for i, case in enumerate(config.cases)}

    def check(self, config: BaseModel, ctx: CheckContext) -> None:
        assert isinstance(config, ChooseConfig)
        for i, case in enumerate(config.cases):
            if not case.default:
                ctx.check_condition(case.when, f".cases[{i}].when")

    def activate(self, config: BaseModel, scope: Scope) -> Command:
        assert isinstance(config, ChooseConfig)
        for i, case in enumerate(config.cases):
            if case.default or scope.evaluate(case.when):
                return EnterBlocks((f"case{i}",), {"case": i})
        raise AssertionError("cases are exhaustive in these tests")

    def combine(self, config: BaseModel, decision: JSON, block_outputs: Mapping[str, JSON]) -> JSON:
        ((output,),) = [block_outputs.values()]
        return output


class ForkConfig(_Config):
    branches: dict[str, list[Any]]


class ForkKind(NodeKind):
    """Policy ``all``: every branch runs; the output is keyed by branch name (a parallel)."""

    kind = "fork"
    config_model = ForkConfig
    block_policy = "all"

    def blocks(self, config: BaseModel) -> Mapping[str, Sequence[JSON]]:
        assert isinstance(config, ForkConfig)
        return dict(config.branches)

    def activate(self, config: BaseModel, scope: Scope) -> Command:
        assert isinstance(config, ForkConfig)
        return EnterBlocks(tuple(config.branches))

    def combine(self, config: BaseModel, decision: JSON, block_outputs: Mapping[str, JSON]) -> JSON:
        return dict(block_outputs)


@hookimpl
def weave_register_node_kinds() -> list[type[NodeKind]]:
    return [JobKind, ChooseKind, ForkKind]


HOST = PluginHost.from_plugins([("test-kinds", sys.modules[__name__])])


# --- building definitions -------------------------------------------------------------


def job(step_id: str, input: JSON = None) -> dict[str, JSON]:
    return {"id": step_id, "kind": "job", "input": {} if input is None else input}


def choose(step_id: str, *cases: tuple[JSON, list[JSON]]) -> dict[str, JSON]:
    """Cases as ``(condition, steps)``; a condition ``None`` is the default case."""
    return {
        "id": step_id,
        "kind": "choose",
        "cases": [
            {"default": True, "steps": steps} if when is None else {"when": when, "steps": steps}
            for when, steps in cases
        ],
    }


def fork(step_id: str, **branches: list[JSON]) -> dict[str, JSON]:
    return {"id": step_id, "kind": "fork", "branches": branches}


def definition(*steps: JSON, **extra: JSON) -> dict[str, JSON]:
    head = {"schema_version": 1, "definition_id": "t", "version": "1"}
    return {**head, "steps": list(steps), **extra}


def program(*steps: JSON, limits: Limits = DEFAULT_LIMITS, **extra: JSON) -> Program:
    return compile(definition(*steps, **extra), HOST, limits)


def ref(text: str) -> dict[str, str]:
    return {"$ref": text}


# --- snapshots ------------------------------------------------------------------------


def ok(output: JSON = None) -> StepState:
    return StepState(Phase.SUCCEEDED, output)


def active(decision: JSON = None, *blocks: str) -> StepState:
    return StepState(Phase.ACTIVE, entered=Entered(decision, blocks) if blocks else None)


def done(output: JSON, decision: JSON, *blocks: str) -> StepState:
    return StepState(Phase.SUCCEEDED, output, Entered(decision, blocks))


def state(phase: Phase, decision: JSON = None, *blocks: str) -> StepState:
    return StepState(phase, entered=Entered(decision, blocks) if blocks else None)


def snap(input: JSON = None, **steps: StepState) -> Snapshot:
    return Snapshot({} if input is None else input, steps)


def brief(plan: Plan) -> list[tuple[str, str]]:
    """``(kind, step_id)`` of every decision, in order."""
    return [(d.kind.value, d.step_id) for d in plan.decisions]


# --- a pure driver: apply decisions, settle activated leaves ------------------------------


def leaf_output(step_id: str, command: Command | None) -> JSON:
    """A deterministic task result: the step id and the input it was given."""
    task_input = command.input if isinstance(command, TaskCommand) else None
    return {"by": step_id, "got": task_input}


def apply(prog: Program, snapshot: Snapshot, decisions: Sequence[Decision]) -> Snapshot:
    """Apply decisions as the kernel would; a leaf's task succeeds at once (via interpret)."""
    steps = dict(snapshot.steps)

    def bump(step_id: str) -> int:
        previous = steps.get(step_id)
        return 1 if previous is None else previous.version + 1

    for decision in decisions:
        sid = decision.step_id
        if decision.kind is DecisionKind.ACTIVATE:
            command = decision.command
            if isinstance(command, EnterBlocks):
                entered = Entered(command.decision, tuple(command.blocks))
                steps[sid] = StepState(Phase.ACTIVE, entered=entered, version=bump(sid))
            else:
                steps[sid] = StepState(Phase.ACTIVE, version=bump(sid))
                result = prog.interpret(
                    sid, Fact(FactKind.TASK_SUCCEEDED, leaf_output(sid, command))
                )
                assert result.outcome is StepOutcome.SUCCEEDED
                steps[sid] = StepState(Phase.SUCCEEDED, result.output, version=bump(sid))
        elif decision.kind is DecisionKind.SKIP:
            steps[sid] = StepState(Phase.SKIPPED, version=bump(sid))
        else:
            previous = steps.get(sid)
            entered = previous.entered if previous is not None else None
            steps[sid] = StepState(Phase.SUCCEEDED, decision.output, entered, version=bump(sid))
    return Snapshot(snapshot.input, steps)


def drive(
    prog: Program, snapshot: Snapshot, limit: int, max_plans: int = 10_000
) -> tuple[Snapshot, list[Decision]]:
    """Plan and apply until nothing more is decided; return the final snapshot and decisions."""
    decisions: list[Decision] = []
    for _ in range(max_plans):
        plan = prog.plan(snapshot, limit)
        assert len(plan.decisions) <= limit
        if not plan.decisions:
            assert not plan.more
            return snapshot, decisions
        decisions.extend(plan.decisions)
        snapshot = apply(prog, snapshot, plan.decisions)
    raise AssertionError("the driver did not reach the end")
