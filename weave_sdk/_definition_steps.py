"""The definition builder's steps: one class per built-in kind, and ``CustomStep``.

Exported by ``weave_sdk.definition``; ``Workflow`` adds them with its builder methods.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, ClassVar, TypeVar

from weave_sdk._definition_fields import (
    Classify,
    Duration,
    Handler,
    Receipt,
    RetryPolicy,
    Timeouts,
    _int,
    _put,
    _schema,
    _seconds,
    _str,
)
from weave_sdk.exactjson import JSON
from weave_sdk.expressions import Condition, Ref, condition_json, ref, value_json


def _steps(steps: Sequence[Step], where: str) -> tuple[Step, ...]:
    if isinstance(steps, Step) or not isinstance(steps, Sequence):
        raise TypeError(f"{where}: expected a list of steps")
    for index, step in enumerate(steps):
        if not isinstance(step, Step):
            raise TypeError(f"{where}[{index}]: {type(step).__name__} is not a step")
    return tuple(steps)


class Step:
    """Base class of every step. ``output(...)`` references this step's saved output."""

    kind: ClassVar[str]
    id: str

    def output(self, *path: str | int) -> Ref:
        """``ref.step(self.id).output(*path)``."""
        return ref.step(self.id).output(*path)

    def to_json(self) -> dict[str, JSON]:
        """The step's JSON: a fresh copy, safe to change without changing the step."""
        return copy.deepcopy({"id": self.id, "kind": self.kind, **self._fields_json()})

    def _fields_json(self) -> dict[str, JSON]:
        raise NotImplementedError

    def _check_id(self) -> None:
        if not isinstance(self.id, str):
            raise TypeError(f"step id: expected a str, not {type(self.id).__name__}")


@dataclass(frozen=True)
class TaskStep(Step):
    """``task``: run a handler on a worker once (with retries), save its output.

    :param id: step id, unique in the definition.
    :param queue: the queue workers claim this task from (``None``: the workflow's).
    :param handler: the handler and its version, or a ``@handler`` function (its return
        model gives ``output_schema`` unless one is passed).
    :param input: the task input template: literals and ``Ref`` values, nested freely;
        ``None``: not set (the engine uses ``{}``).
    :param output_schema: JSON Schema the output must satisfy (checked on success).
    :param retry: retry budget; ``None`` leaves the engine default.
    :param timeouts: dispatch timeouts; ``None`` leaves the engine defaults.
    :param trace_key: template resolving to a string carried with the task for tracing.
    :param resource_key: template resolving to a string naming the resource it touches.
    """

    kind: ClassVar[str] = "task"
    id: str
    _: KW_ONLY
    queue: str | None = None
    handler: Handler
    input: Any = None
    output_schema: Mapping[str, Any] | None = None
    retry: RetryPolicy | None = None
    timeouts: Timeouts | None = None
    trace_key: Any = None
    resource_key: Any = None

    def __post_init__(self) -> None:
        self._check_id()
        if self.queue is not None:
            _str(self.queue, "queue")
        object.__setattr__(self, "trace_key", value_json(self.trace_key, "trace_key"))
        object.__setattr__(self, "resource_key", value_json(self.resource_key, "resource_key"))
        if not isinstance(self.handler, Handler):
            raise TypeError("handler: expected a Handler(name, version)")
        object.__setattr__(self, "input", value_json(self.input, "input"))
        derive = getattr(self.handler, "output_schema", None)  # a @handler's return model
        schema = self.output_schema if self.output_schema is not None or derive is None else (
            derive())
        object.__setattr__(self, "output_schema", _schema(schema, "output_schema"))
        if self.retry is not None and not isinstance(self.retry, RetryPolicy):
            raise TypeError("retry: expected a RetryPolicy")
        if self.timeouts is not None and not isinstance(self.timeouts, Timeouts):
            raise TypeError("timeouts: expected Timeouts")

    def _fields_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {}
        _put(out, "queue", self.queue)
        out["handler"] = self.handler.to_json()
        _put(out, "input", self.input)
        _put(out, "output_schema", self.output_schema)
        _put(out, "retry", None if self.retry is None else self.retry.to_json())
        _put(out, "timeouts", None if self.timeouts is None else self.timeouts.to_json())
        _put(out, "trace_key", self.trace_key)
        _put(out, "resource_key", self.resource_key)
        return out


@dataclass(frozen=True)
class SignalStep(Step):
    """``signal``: wait durably for one matching signal; its payload is the step's output.

    :param id: step id.
    :param name: signal name.
    :param correlation_key: business key (usually a ``Ref``), resolved at activation.
    :param param_version: parameter version; ``None`` leaves the engine default.
    :param timeout: how long to wait (``timeout_seconds``); ``None``: no timeout of its own.
    """

    kind: ClassVar[str] = "signal"
    id: str
    _: KW_ONLY
    name: str
    correlation_key: Any
    param_version: str | None = None
    timeout: Duration | None = None

    def __post_init__(self) -> None:
        self._check_id()
        _str(self.name, "name")
        _str(self.param_version, "param_version")
        object.__setattr__(
            self, "correlation_key", value_json(self.correlation_key, "correlation_key")
        )
        object.__setattr__(self, "timeout", _seconds(self.timeout, "timeout"))

    def _fields_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {"name": self.name, "correlation_key": self.correlation_key}
        _put(out, "param_version", self.param_version)
        _put(out, "timeout_seconds", self.timeout)
        return out


@dataclass(frozen=True)
class TimerStep(Step):
    """``timer``: wait durably for ``duration`` after activation (``seconds``)."""

    kind: ClassVar[str] = "timer"
    id: str
    _: KW_ONLY
    duration: Duration

    def __post_init__(self) -> None:
        self._check_id()
        object.__setattr__(self, "duration", _seconds(self.duration, "duration"))

    def _fields_json(self) -> dict[str, JSON]:
        return {"seconds": self.duration}


@dataclass(frozen=True)
class PollStep(Step):
    """``poll``: query an external operation in bounded rounds until it settles.

    :param id: step id.
    :param queue: queue of the query tasks (``None``: the workflow's).
    :param handler: the query handler (it must only read; a poll never re-submits).
    :param max_rounds: rounds at most (finite, positive).
    :param interval: pause after a round that is still pending (``interval_seconds``).
    :param deadline: time limit of the whole step from activation (``deadline_seconds``).
    :param classify: how a round's result is read.
    :param input: the query input template; ``None``: not set (the engine uses ``{}``).
    :param attempts_per_round: dispatch attempts within one round; ``None``: not set (1).
    :param receipt: an optional receipt signal that may complete the step instead.
    """

    kind: ClassVar[str] = "poll"
    id: str
    _: KW_ONLY
    queue: str | None = None
    handler: Handler
    max_rounds: int
    interval: Duration
    deadline: Duration
    classify: Classify
    input: Any = None
    attempts_per_round: int | None = None
    receipt: Receipt | None = None

    def __post_init__(self) -> None:
        self._check_id()
        if self.queue is not None:
            _str(self.queue, "queue")
        if not isinstance(self.handler, Handler):
            raise TypeError("handler: expected a Handler(name, version)")
        object.__setattr__(self, "input", value_json(self.input, "input"))
        _int(self.max_rounds, "max_rounds")
        _int(self.attempts_per_round, "attempts_per_round")
        object.__setattr__(self, "interval", _seconds(self.interval, "interval"))
        object.__setattr__(self, "deadline", _seconds(self.deadline, "deadline"))
        if not isinstance(self.classify, Classify):
            raise TypeError("classify: expected Classify(field, pending, succeeded, failed)")
        if self.receipt is not None and not isinstance(self.receipt, Receipt):
            raise TypeError("receipt: expected a Receipt")

    def _fields_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {}
        _put(out, "queue", self.queue)
        out["handler"] = self.handler.to_json()
        _put(out, "input", self.input)
        out["max_rounds"] = self.max_rounds
        out["interval_seconds"] = self.interval
        out["deadline_seconds"] = self.deadline
        _put(out, "attempts_per_round", self.attempts_per_round)
        out["classify"] = self.classify.to_json()
        _put(out, "receipt", None if self.receipt is None else self.receipt.to_json())
        return out


@dataclass(frozen=True)
class Case:
    """A case of a ``branch``: run ``steps`` when ``when`` holds (first match wins)."""

    when: Condition | bool
    steps: Sequence[Step]

    def __post_init__(self) -> None:
        condition_json(self.when, "when")
        object.__setattr__(self, "steps", _steps(self.steps, "case.steps"))

    def to_json(self) -> dict[str, JSON]:
        return {"when": condition_json(self.when), "steps": [s.to_json() for s in self.steps]}


@dataclass(frozen=True)
class Default:
    """The last case of a ``branch``: runs when no case before it matched."""

    steps: Sequence[Step]

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", _steps(self.steps, "default.steps"))

    def to_json(self) -> dict[str, JSON]:
        return {"default": True, "steps": [s.to_json() for s in self.steps]}


@dataclass(frozen=True)
class BranchStep(Step):
    """``branch``: run the steps of the first case whose condition holds.

    Cases must be exhaustive: end with a ``Default`` (or have provably total conditions).
    Steps inside a case are not guaranteed to run: after the branch, read them only under
    ``exists(...)``.
    """

    kind: ClassVar[str] = "branch"
    id: str
    cases: Sequence[Case | Default]

    def __post_init__(self) -> None:
        self._check_id()
        if not isinstance(self.cases, Sequence):
            raise TypeError("cases: expected a list of Case/Default")
        for index, case in enumerate(self.cases):
            if not isinstance(case, Case | Default):
                raise TypeError(f"cases[{index}]: expected a Case or a Default")
        object.__setattr__(self, "cases", tuple(self.cases))

    def _fields_json(self) -> dict[str, JSON]:
        return {"cases": [c.to_json() for c in self.cases]}


@dataclass(frozen=True)
class ParallelStep(Step):
    """``parallel``: run every named branch; the output is an object keyed by branch name."""

    kind: ClassVar[str] = "parallel"
    id: str
    branches: Mapping[str, Sequence[Step]]

    def __post_init__(self) -> None:
        self._check_id()
        if not isinstance(self.branches, Mapping):
            raise TypeError("branches: expected a dict of branch name -> list of steps")
        branches: dict[str, tuple[Step, ...]] = {}
        for name, steps in self.branches.items():
            if not isinstance(name, str):
                raise TypeError("branches: branch names are str")
            branches[name] = _steps(steps, f"branches.{name}")
        object.__setattr__(self, "branches", branches)

    def _fields_json(self) -> dict[str, JSON]:
        return {
            "branches": {
                name: [s.to_json() for s in steps] for name, steps in self.branches.items()
            }
        }


@dataclass(frozen=True)
class CustomStep(Step):
    """A step of a kind served by a third-party node plugin: ``config`` is sent as is.

    :param id: step id.
    :param kind: the plugin's kind string (it must be installed on the server).
    :param config: the kind's fields other than ``id`` and ``kind`` (exact JSON).
    """

    id: str
    kind: str  # type: ignore[misc]  # an instance field here, a ClassVar on built-in kinds
    config: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._check_id()
        _str(self.kind, "kind")
        config = value_json(self.config, "config")
        if not isinstance(config, dict):
            raise TypeError("config: expected a dict")
        for reserved in ("id", "kind"):
            if reserved in config:
                raise ValueError(f"config: {reserved!r} is set by the step, not in config")
        object.__setattr__(self, "config", config)

    def _fields_json(self) -> dict[str, JSON]:
        return dict(self.config)


_S = TypeVar("_S", bound=Step)

BUILTIN_KINDS: dict[str, type[Step]] = {
    cls.kind: cls for cls in (TaskStep, SignalStep, TimerStep, PollStep, BranchStep, ParallelStep)
}
"""The six built-in kinds; any other kind string is a third-party ``CustomStep``."""
