"""Handler contracts in a definition: the workflow's default queue, and each ``@handler``
input model checked against the step's input template before anything is published.

A template is JSON with ``$ref`` values resolved only at run time, so the check is what
can be known locally: a field the model requires that the template does not set, a key a
model with ``extra="forbid"`` refuses, and a literal value the field's type refuses. A
reference is trusted here (the server checks referenced types at publish time).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

import pydantic

from weave_sdk.errors import Problem

if TYPE_CHECKING:
    from weave_sdk.definition import Step, Workflow

INPUT_MODEL_MISMATCH: Final = "input_model_mismatch"
"""The problem code: a step's input template cannot satisfy its handler's input model."""

_QUEUED_KINDS: Final = ("task", "poll")


def fill_queue(steps: list[Any], queue: str) -> None:
    """Give every ``task`` and ``poll`` step of a document without a queue ``queue``."""
    for step in steps:
        if not isinstance(step, dict):
            continue
        if step.get("kind") in _QUEUED_KINDS and "queue" not in step:
            step["queue"] = queue
        for case in step.get("cases") or []:
            fill_queue(case.get("steps") or [], queue)
        for branch in (step.get("branches") or {}).values():
            fill_queue(branch, queue)


def _walk(steps: Any, path: str) -> Iterator[tuple[str, Step]]:
    from weave_sdk.definition import BranchStep, ParallelStep

    for index, step in enumerate(steps):
        here = f"{path}[{index}]"
        yield here, step
        if isinstance(step, BranchStep):
            for n, case in enumerate(step.cases):
                yield from _walk(case.steps, f"{here}.cases[{n}].steps")
        elif isinstance(step, ParallelStep):
            for name, branch in step.branches.items():
                yield from _walk(branch, f"{here}.branches.{name}")


def _has_ref(value: Any) -> bool:
    if isinstance(value, Mapping):
        return "$ref" in value or any(_has_ref(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_ref(v) for v in value)
    return False


def _check(model: type[pydantic.BaseModel], template: Any, path: str) -> list[Problem]:
    name = model.__name__
    if template is None:
        template = {}  # the engine's default input
    if not isinstance(template, Mapping) or "$ref" in template:
        return []  # a whole-value reference: only known at run time
    problems: list[Problem] = []
    fields = model.model_fields
    by_key = {(info.alias or key): (key, info) for key, info in fields.items()}
    for key, (_, info) in by_key.items():
        if info.is_required() and key not in template:
            problems.append(Problem(path, INPUT_MODEL_MISMATCH,
                                    f"{name} requires {key!r}; the input template does not "
                                    "set it"))
    forbid = model.model_config.get("extra") == "forbid"
    for key, value in template.items():
        if key not in by_key:
            if forbid:
                problems.append(Problem(f"{path}.{key}", INPUT_MODEL_MISMATCH,
                                        f"{name} has no field {key!r} (extra fields are "
                                        "forbidden)"))
            continue
        if _has_ref(value):
            continue
        info = by_key[key][1]
        if info.annotation is None:
            continue
        try:
            pydantic.TypeAdapter(info.annotation).validate_python(value)
        except pydantic.ValidationError as exc:
            reason = exc.errors()[0]["msg"] if exc.errors() else str(exc)
            problems.append(Problem(f"{path}.{key}", INPUT_MODEL_MISMATCH,
                                    f"{name}.{key}: {reason}"))
    return problems


def check_handler_inputs(workflow: Workflow) -> list[Problem]:
    """Every ``input_model_mismatch`` of the workflow's ``@handler`` steps."""
    problems: list[Problem] = []
    for path, step in _walk(workflow.steps, "$.steps"):
        model = getattr(getattr(step, "handler", None), "input_model", None)
        if isinstance(model, type) and issubclass(model, pydantic.BaseModel):
            problems += _check(model, getattr(step, "input", None), f"{path}.input")
    return problems


__all__ = ["INPUT_MODEL_MISMATCH", "check_handler_inputs", "fill_queue"]
