"""Helpers for the run-time tests of the built-in kinds: compile with the installed plugins."""

from __future__ import annotations

from typing import Any

from weave_core.exactjson import JSON
from weave_core.limits import DEFAULT_LIMITS, Limits
from weave_core.nodespec import Command
from weave_core.plan import DecisionKind
from weave_core.plugins import PluginHost
from weave_core.program import Program, compile
from weave_core.snapshot import Snapshot, StepState

HOST = PluginHost.from_entry_points()
HANDLER = {"name": "h", "version": "1"}


def ref(text: str) -> dict[str, str]:
    return {"$ref": text}


def task(step_id: str, **fields: Any) -> dict[str, Any]:
    return {"id": step_id, "kind": "task", "queue": "jobs", "handler": HANDLER, **fields}


def program(*steps: JSON, limits: Limits = DEFAULT_LIMITS, **extra: JSON) -> Program:
    document = {"schema_version": 1, "definition_id": "d", "version": "1", "steps": list(steps)}
    return compile({**document, **extra}, HOST, limits)


def first_command(prog: Program, input: JSON = None, **steps: StepState) -> Command:
    """The command of the first ACTIVATE decision planned from ``input`` and ``steps``."""
    plan = prog.plan(Snapshot({} if input is None else input, steps))
    for decision in plan.decisions:
        if decision.kind is DecisionKind.ACTIVATE:
            assert decision.command is not None
            return decision.command
    raise AssertionError(f"no ACTIVATE in {plan}")
