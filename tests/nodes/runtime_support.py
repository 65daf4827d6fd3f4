"""Helpers for the run-time tests of the built-in kinds: compile with the installed plugins."""

from __future__ import annotations

from typing import Any

from weave_core.foundation.exactjson import JSON
from weave_core.foundation.limits import DEFAULT_LIMITS, Limits
from weave_core.planning.plan import DecisionKind
from weave_core.planning.program import Program, compile
from weave_core.planning.snapshot import Snapshot, StepState
from weave_core.plugins.host import PluginHost
from weave_core.plugins.nodespec import Command

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
