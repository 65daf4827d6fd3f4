"""Reading definition documents into the builder (``Workflow.from_json``).

Every field is taken by name and a leftover is an unknown field, so ``from_json(d).to_json()
== d`` for every accepted ``d``; a document that cannot be read raises
``DefinitionFormatError`` naming the JSON path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from weave_sdk.definition import (
    SCHEMA_VERSION,
    BranchStep,
    Case,
    Classify,
    CustomStep,
    Default,
    Handler,
    ParallelStep,
    PollStep,
    Receipt,
    RetryPolicy,
    SignalStep,
    Step,
    TaskStep,
    Timeouts,
    TimerStep,
    Workflow,
)
from weave_sdk.errors import DefinitionFormatError
from weave_sdk.exactjson import check_exact
from weave_sdk.expressions import Condition


class _Fields:
    """The fields of one JSON object being read; leftovers are unknown fields."""

    def __init__(self, value: Any, path: str) -> None:
        if not isinstance(value, Mapping):
            raise DefinitionFormatError(path, "expected an object")
        self.path = path
        self.items: dict[str, Any] = dict(value)

    def at(self, key: str) -> str:
        return f"{self.path}.{key}"

    def take(self, key: str, *, required: bool = True) -> Any:
        if key not in self.items:
            if required:
                raise DefinitionFormatError(self.at(key), "required field is missing")
            return None
        return self.items.pop(key)

    def text(self, key: str, *, required: bool = True) -> Any:
        value = self.take(key, required=required)
        if value is not None and not isinstance(value, str):
            raise DefinitionFormatError(self.at(key), "expected a string")
        return value

    def done(self) -> None:
        for key in self.items:
            raise DefinitionFormatError(self.at(key), "unknown field")


def _convert(path: str, build: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return build(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, DefinitionFormatError):
            raise
        raise DefinitionFormatError(path, str(exc)) from exc


def _read_handler(value: Any, path: str) -> Handler:
    f = _Fields(value, path)
    name, version = f.text("name"), f.text("version")
    idempotent = f.take("idempotent", required=False)
    f.done()
    return _convert(path, Handler, name, version, idempotent)  # type: ignore[no-any-return]  # _convert returns build's result


def _read_optional(f: _Fields, key: str, build: Any, names: Sequence[tuple[str, str]]) -> Any:
    value = f.take(key, required=False)
    if value is None:
        return None
    sub = _Fields(value, f.at(key))
    kwargs = {py: sub.take(js, required=False) for js, py in names}
    sub.done()
    return _convert(sub.path, build, **kwargs)


def _read_steps(value: Any, path: str) -> list[Step]:
    if not isinstance(value, list):
        raise DefinitionFormatError(path, "expected a list of steps")
    return [_read_step(item, f"{path}[{index}]") for index, item in enumerate(value)]


def _read_step(value: Any, path: str) -> Step:
    f = _Fields(value, path)
    step_id, kind = f.text("id"), f.text("kind")
    step: Step
    if kind == "task":
        step = _convert(
            path,
            TaskStep,
            step_id,
            queue=f.text("queue"),
            handler=_read_handler(f.take("handler"), f.at("handler")),
            input=f.take("input", required=False),
            output_schema=f.take("output_schema", required=False),
            retry=_read_optional(
                f,
                "retry",
                RetryPolicy,
                [
                    ("max_attempts", "max_attempts"),
                    ("backoff_seconds", "backoff"),
                    ("backoff_multiplier", "backoff_multiplier"),
                    ("max_backoff_seconds", "max_backoff"),
                ],
            ),
            timeouts=_read_optional(
                f,
                "timeouts",
                Timeouts,
                [(n, n) for n in ("schedule_to_start", "start_to_close", "heartbeat")],
            ),
            trace_key=f.take("trace_key", required=False),
            resource_key=f.take("resource_key", required=False),
        )
    elif kind == "signal":
        step = _convert(
            path,
            SignalStep,
            step_id,
            name=f.text("name"),
            correlation_key=f.take("correlation_key"),
            param_version=f.text("param_version", required=False),
            timeout=f.take("timeout_seconds", required=False),
        )
    elif kind == "timer":
        step = _convert(path, TimerStep, step_id, duration=f.take("seconds"))
    elif kind == "poll":
        classify = _Fields(f.take("classify"), f.at("classify"))
        classify_args = [classify.take(k) for k in ("field", "pending", "succeeded", "failed")]
        classify_args.append(classify.take("needs_review", required=False))
        classify.done()
        receipt = f.take("receipt", required=False)
        receipt_obj = None
        if receipt is not None:
            r = _Fields(receipt, f.at("receipt"))
            receipt_obj = _convert(
                r.path,
                Receipt,
                r.text("name"),
                r.take("correlation_key"),
                r.text("param_version", required=False),
            )
            r.done()
        step = _convert(
            path,
            PollStep,
            step_id,
            queue=f.text("queue"),
            handler=_read_handler(f.take("handler"), f.at("handler")),
            input=f.take("input", required=False),
            max_rounds=f.take("max_rounds"),
            interval=f.take("interval_seconds"),
            deadline=f.take("deadline_seconds"),
            attempts_per_round=f.take("attempts_per_round", required=False),
            classify=_convert(classify.path, Classify, *classify_args),
            receipt=receipt_obj,
        )
    elif kind == "branch":
        cases_path = f.at("cases")
        raw_cases = f.take("cases")
        if not isinstance(raw_cases, list):
            raise DefinitionFormatError(cases_path, "expected a list of cases")
        cases: list[Case | Default] = []
        for index, raw in enumerate(raw_cases):
            c = _Fields(raw, f"{cases_path}[{index}]")
            if "default" in c.items:
                if c.take("default") is not True:
                    raise DefinitionFormatError(c.at("default"), "must be true")
                cases.append(Default(_read_steps(c.take("steps"), c.at("steps"))))
            else:
                when = c.take("when")
                steps = _read_steps(c.take("steps"), c.at("steps"))
                cases.append(Case(_read_condition(when, c.at("when")), steps))
            c.done()
        step = BranchStep(step_id, cases)
    elif kind == "parallel":
        raw_branches = f.take("branches")
        if not isinstance(raw_branches, Mapping):
            raise DefinitionFormatError(f.at("branches"), "expected an object of step lists")
        step = ParallelStep(
            step_id,
            {
                name: _read_steps(steps, f"{f.at('branches')}.{name}")
                for name, steps in raw_branches.items()
            },
        )
    else:
        config, f.items = f.items, {}
        step = _convert(path, CustomStep, step_id, kind, config)
    f.done()
    return step


def _read_condition(value: Any, path: str) -> Condition | bool:
    if isinstance(value, bool):
        return value
    _convert(path, check_exact, value, path)
    return Condition(value)


def _read_workflow(document: Mapping[str, Any]) -> Workflow:
    f = _Fields(document, "$")
    schema_version = f.take("schema_version")
    if schema_version != SCHEMA_VERSION or isinstance(schema_version, bool):
        raise DefinitionFormatError(
            "$.schema_version", f"this SDK reads schema_version {SCHEMA_VERSION}"
        )
    workflow = _convert(
        "$",
        Workflow,
        f.text("definition_id"),
        version=f.text("version"),
        input_schema=f.take("input_schema", required=False),
        failure_policy=f.text("failure_policy", required=False),
        deadline=f.take("deadline_seconds", required=False),
        limits=f.take("limits", required=False),
        steps=_read_steps(f.take("steps"), "$.steps"),
    )
    f.done()
    assert isinstance(workflow, Workflow)
    return workflow



def read_workflow(document: Mapping[str, Any]) -> Workflow:
    """See ``Workflow.from_json``."""
    return _read_workflow(document)
