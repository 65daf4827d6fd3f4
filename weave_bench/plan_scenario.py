"""``weave bench plan``: decisions per second of the pure decision core, beside L3.

A 200-step definition of the built-in kinds (tasks in sequences, branches with nested
parallels, parallels with nested branches) is driven to its end on one core, over and over:
plan with the full budget, apply the decisions the way the kernel records them (a leaf's
task succeeds at once), plan again. Only the time inside ``Program.plan`` is counted. The
figure is reported with its ratio to L3 (one advance transaction on one connection): the
core must be at least 20 times faster per decision than that transaction.
"""

from __future__ import annotations

import time
from typing import Any

from weave_bench import BenchContext, Metric, scenario
from weave_core.foundation.limits import DEFAULT_LIMITS
from weave_core.planning.plan import MAX_PLAN_LIMIT, DecisionKind
from weave_core.planning.program import Program, compile
from weave_core.planning.snapshot import Entered, Phase, Snapshot, StepState
from weave_core.plugins.host import PluginHost
from weave_core.plugins.nodespec import EnterBlocks, TaskCommand

TARGET_STEPS = 200


def _task(step_id: str, source: str | None) -> dict[str, Any]:
    data = {"$ref": f"steps.{source}.output"} if source else {"$ref": "input.amount"}
    return {
        "id": step_id,
        "kind": "task",
        "queue": "bench",
        "handler": {"name": step_id, "version": "1"},
        "input": {"data": data, "job": {"$ref": "input.job"}},
    }


def definition(target: int = TARGET_STEPS) -> dict[str, Any]:
    """A definition of exactly ``target`` steps with branches and parallels nested two deep."""
    count = 0

    def sid(prefix: str) -> str:
        nonlocal count
        count += 1
        return f"{prefix}{count}"

    def seq(n: int) -> list[dict[str, Any]]:
        steps: list[dict[str, Any]] = []
        for _ in range(n):
            steps.append(_task(sid("t"), steps[-1]["id"] if steps else None))
        return steps

    def branch() -> dict[str, Any]:
        step_id = sid("b")
        return {
            "id": step_id,
            "kind": "branch",
            "cases": [
                {"when": {"gt": [{"$ref": "input.amount"}, 1000]}, "steps": seq(2)},
                {"when": {"eq": [{"$ref": "input.amount"}, 500]}, "steps": [parallel(inner=False)]},
                {"default": True, "steps": [*seq(1), parallel(inner=False)]},
            ],
        }

    def parallel(inner: bool = True) -> dict[str, Any]:
        step_id = sid("p")
        branches = {f"w{i}": seq(2) for i in range(3)}
        if inner:
            branches["nested"] = [*seq(1), branch()]
        return {"id": step_id, "kind": "parallel", "branches": branches}

    top: list[dict[str, Any]] = []
    while count < target - 30:
        top.extend(seq(2))
        top.append(branch())
        top.append(parallel())
    top.extend(seq(target - count))
    return {"schema_version": 1, "definition_id": "bench-plan", "version": "1", "steps": top}


def _apply(snapshot: Snapshot, decisions: Any) -> Snapshot:
    steps = dict(snapshot.steps)
    for d in decisions:
        if d.kind is DecisionKind.ACTIVATE:
            command = d.command
            if isinstance(command, EnterBlocks):
                steps[d.step_id] = StepState(Phase.ACTIVE, entered=Entered(command.decision,
                                                                           command.blocks))
            else:
                assert isinstance(command, TaskCommand)
                steps[d.step_id] = StepState(Phase.SUCCEEDED, {"by": d.step_id, "n": 1})
        elif d.kind is DecisionKind.SKIP:
            steps[d.step_id] = StepState(Phase.SKIPPED)
        else:
            previous = steps.get(d.step_id)
            steps[d.step_id] = StepState(
                Phase.SUCCEEDED, d.output, previous.entered if previous else None
            )
    return Snapshot(snapshot.input, steps)


def drive(program: Program, input: Any, limit: int = MAX_PLAN_LIMIT) -> tuple[int, int, float]:
    """Drive one instance to its end: (decisions, plans, seconds spent inside plan())."""
    snapshot = Snapshot(input)
    decisions = plans = 0
    spent = 0.0
    while True:
        started = time.perf_counter()
        plan = program.plan(snapshot, limit)
        spent += time.perf_counter() - started
        plans += 1
        if not plan.decisions:
            return decisions, plans, spent
        decisions += len(plan.decisions)
        snapshot = _apply(snapshot, plan.decisions)


INPUTS = ({"amount": 5000, "job": "j"}, {"amount": 500, "job": "j"}, {"amount": 7, "job": "j"})


def measure(runs: int) -> tuple[float, float, float]:
    """(decisions per second, mean decisions per plan, µs per plan) over ``runs`` drives."""
    program = compile(definition(), PluginHost.from_entry_points(), DEFAULT_LIMITS)
    assert len(program.step_ids()) == TARGET_STEPS
    decisions = plans = 0
    spent = 0.0
    for index in range(runs):
        d, p, s = drive(program, INPUTS[index % len(INPUTS)])
        decisions, plans, spent = decisions + d, plans + p, spent + s
    return decisions / spent, decisions / plans, spent / plans * 1e6


@scenario("plan", "decision core: decisions/s driving a 200-step nested definition, one core")
def plan_scenario(ctx: BenchContext) -> list[Metric]:
    per_second, per_plan, plan_us = measure(ctx.pick(3, 30, 150))
    return [
        Metric("decisions_per_s", per_second, "decisions/s", baseline="L3_1",
               note="target >= 20x L3_1 (one advance transaction, one connection)"),
        Metric("decisions_per_plan", per_plan, "decisions", note="budget 32"),
        Metric("plan_us", plan_us, "µs", note="mean time of one plan() call"),
    ]


__all__ = ["definition", "drive", "measure", "plan_scenario"]
