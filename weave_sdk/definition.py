"""The typed definition builder: ``Workflow`` and one step class per built-in kind.

``Workflow.to_json()`` produces exactly the schema_version 1 document of DESIGN.md §2 and
only the fields you set: the builder invents no defaults (an unset field is left to the
engine's default). ``Workflow.from_json()`` reads a document back; the round trip is exact.

Python names drop the ``_seconds`` suffix of duration fields and accept a ``timedelta`` or
an ``int`` number of seconds (``deadline=timedelta(days=1)`` → ``"deadline_seconds": 86400``).
Numbers must be ``int`` or ``Decimal``: a ``float`` anywhere raises ``TypeError``, because
the engine keeps numbers exact and a float has already lost digits. The builder checks
Python types; the rules of a valid definition are checked by ``validate()`` (locally) and by
the server at publish time, each reporting every problem at once.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import timedelta
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from weave_sdk.exactjson import JSON, check_exact
from weave_sdk.expressions import Condition, Ref, condition_json, ref, value_json

if TYPE_CHECKING:
    from weave_sdk.errors import Problem

SCHEMA_VERSION = 1
"""The definition format this SDK writes."""

Duration = timedelta | int
"""A duration: a ``timedelta`` or a whole number of seconds."""

Number = int | Decimal


class FailurePolicy(StrEnum):
    """What a final step failure does to the instance (DESIGN.md R-8.4)."""

    REVIEW = "REVIEW"
    """The instance goes to ``NEEDS_REVIEW`` for a person to decide."""
    FAIL_AFTER_SETTLED = "FAIL_AFTER_SETTLED"
    """Cancel the rest, collect what started, then ``FAILED`` once everything settled."""


def _seconds(value: Duration | Decimal | None, where: str) -> int | None:
    """Whole seconds from a timedelta or an int; ``None`` stays unset."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError(f"{where}: expected a timedelta or int seconds, not bool")
    if isinstance(value, timedelta):
        if value.microseconds:
            raise ValueError(f"{where}: {value} is not a whole number of seconds")
        return value.days * 86400 + value.seconds
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        return int(value)
    if isinstance(value, float):
        raise TypeError(f"{where}: float {value!r} is not exact; pass an int or a timedelta")
    raise TypeError(f"{where}: expected a timedelta or int seconds, not {type(value).__name__}")


def _exact_seconds(value: Duration | Decimal | None, where: str) -> Number | None:
    """Seconds that may be fractional (backoff): timedelta, int or Decimal, kept exact."""
    if isinstance(value, timedelta):
        exact = Decimal(value.days * 86400 + value.seconds) + Decimal(value.microseconds).scaleb(-6)
        return int(exact) if exact == exact.to_integral_value() else exact.normalize()
    if isinstance(value, Decimal) and not isinstance(value, bool):
        if not value.is_finite():
            raise ValueError(f"{where}: {value} is not a number")
        return value
    return _seconds(value, where)


def _number(value: Number | None, where: str) -> Number | None:
    if value is None or (isinstance(value, int | Decimal) and not isinstance(value, bool)):
        return value
    if isinstance(value, float):
        raise TypeError(f"{where}: float {value!r} is not exact; use int or Decimal")
    raise TypeError(f"{where}: expected an int or a Decimal, not {type(value).__name__}")


def _int(value: int | None, where: str) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise TypeError(f"{where}: expected an int, not {type(value).__name__}")


def _str(value: str | None, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{where}: expected a str, not {type(value).__name__}")


def _schema(value: Mapping[str, Any] | None, where: str) -> dict[str, JSON] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"{where}: expected a JSON Schema object (a dict)")
    result = value_json(value, where)
    assert isinstance(result, dict)
    return result


def _steps(steps: Sequence[Step], where: str) -> tuple[Step, ...]:
    if isinstance(steps, Step) or not isinstance(steps, Sequence):
        raise TypeError(f"{where}: expected a list of steps")
    for index, step in enumerate(steps):
        if not isinstance(step, Step):
            raise TypeError(f"{where}[{index}]: {type(step).__name__} is not a step")
    return tuple(steps)


def _put(out: dict[str, JSON], key: str, value: JSON) -> None:
    if value is not None:
        out[key] = value


# --- configuration objects -----------------------------------------------------------


@dataclass(frozen=True)
class Handler:
    """The worker handler a ``task`` or ``poll`` runs.

    :param name: handler name, as registered by the workers.
    :param version: handler version; an unknown version waits visibly, never switches.
    :param idempotent: whether re-running after an unknown outcome is safe. ``None`` (the
        default) leaves the field out and the engine assumes ``true``.
    """

    name: str
    version: str
    idempotent: bool | None = None

    def __post_init__(self) -> None:
        _str(self.name, "handler.name")
        _str(self.version, "handler.version")
        if self.idempotent is not None and not isinstance(self.idempotent, bool):
            raise TypeError("handler.idempotent: expected a bool")

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {"name": self.name, "version": self.version}
        _put(out, "idempotent", self.idempotent)
        return out


@dataclass(frozen=True)
class RetryPolicy:
    """The dispatch layer's retry budget of a task. Every field left ``None`` is not sent
    and the engine's default applies (3 attempts, 1 s backoff, multiplier 2, 300 s cap).

    :param max_attempts: attempts in total, the first one included (``max_attempts``).
    :param backoff: delay before the first retry (``backoff_seconds``; may be fractional).
    :param backoff_multiplier: factor applied to the delay after each retry.
    :param max_backoff: the largest delay between two attempts (``max_backoff_seconds``).
    """

    max_attempts: int | None = None
    backoff: Duration | Decimal | None = None
    backoff_multiplier: Number | None = None
    max_backoff: Duration | Decimal | None = None

    def __post_init__(self) -> None:
        _int(self.max_attempts, "retry.max_attempts")
        object.__setattr__(self, "backoff", _exact_seconds(self.backoff, "retry.backoff"))
        _number(self.backoff_multiplier, "retry.backoff_multiplier")
        object.__setattr__(
            self, "max_backoff", _exact_seconds(self.max_backoff, "retry.max_backoff")
        )

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {}
        _put(out, "max_attempts", self.max_attempts)
        _put(out, "backoff_seconds", self.backoff)
        _put(out, "backoff_multiplier", self.backoff_multiplier)
        _put(out, "max_backoff_seconds", self.max_backoff)
        return out


@dataclass(frozen=True)
class Timeouts:
    """Dispatch timeouts of a task, in whole seconds; ``None`` leaves the engine default.

    :param schedule_to_start: longest wait in the queue before a worker claims the task.
    :param start_to_close: longest run of one attempt.
    :param heartbeat: longest silence between heartbeats of a running attempt.
    """

    schedule_to_start: Duration | None = None
    start_to_close: Duration | None = None
    heartbeat: Duration | None = None

    def __post_init__(self) -> None:
        for name in ("schedule_to_start", "start_to_close", "heartbeat"):
            object.__setattr__(self, name, _seconds(getattr(self, name), f"timeouts.{name}"))

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {}
        _put(out, "schedule_to_start", self.schedule_to_start)
        _put(out, "start_to_close", self.start_to_close)
        _put(out, "heartbeat", self.heartbeat)
        return out


@dataclass(frozen=True)
class Classify:
    """How a ``poll`` reads a round's result: the value at ``field`` decides.

    :param field: the result field holding the external status (e.g. ``"status"``).
    :param pending: values meaning "still running": wait ``interval`` and poll again.
    :param succeeded: values meaning done: the step succeeds with the result.
    :param failed: values meaning the operation failed: the failure policy applies.
    :param needs_review: values that send the step to review (optional). Any value in no
        list is never success and never another round: it goes to review too.
    """

    field: str
    pending: Sequence[JSON]
    succeeded: Sequence[JSON]
    failed: Sequence[JSON]
    needs_review: Sequence[JSON] | None = None

    def __post_init__(self) -> None:
        _str(self.field, "classify.field")
        for name in ("pending", "succeeded", "failed", "needs_review"):
            values = getattr(self, name)
            if values is None and name == "needs_review":
                continue
            if isinstance(values, str) or not isinstance(values, Sequence):
                raise TypeError(f"classify.{name}: expected a list of values")
            object.__setattr__(self, name, tuple(value_json(v, f"classify.{name}") for v in values))

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {
            "field": self.field,
            "pending": list(self.pending),
            "succeeded": list(self.succeeded),
            "failed": list(self.failed),
        }
        if self.needs_review is not None:
            out["needs_review"] = list(self.needs_review)
        return out


@dataclass(frozen=True)
class Receipt:
    """A final receipt signal a ``poll`` also accepts; whichever arrives first completes it.

    :param name: signal name.
    :param correlation_key: business key (usually a ``Ref``), frozen at activation.
    :param param_version: parameter version of the signal; ``None`` leaves the default.
    """

    name: str
    correlation_key: Any
    param_version: str | None = None

    def __post_init__(self) -> None:
        _str(self.name, "receipt.name")
        _str(self.param_version, "receipt.param_version")
        object.__setattr__(
            self, "correlation_key", value_json(self.correlation_key, "receipt.correlation_key")
        )

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {"name": self.name, "correlation_key": self.correlation_key}
        _put(out, "param_version", self.param_version)
        return out


# --- steps ---------------------------------------------------------------------------


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


# --- the workflow --------------------------------------------------------------------


class Workflow:
    """A workflow definition (schema_version 1), built step by step.

    :param definition_id: the definition's id in its namespace (1-128 characters).
    :param version: the version being built; a published version never changes.
    :param input_schema: JSON Schema of the instance input; ``None``: not set (any input).
    :param failure_policy: ``REVIEW`` or ``FAIL_AFTER_SETTLED`` (a ``FailurePolicy`` or str);
        ``None``: not set (the engine applies ``REVIEW``).
    :param deadline: instance deadline from start (``deadline_seconds``); ``None``: not set.
    :param limits: per-definition limits object, sent as is; ``None``: not set.
    :param steps: initial top-level steps; more can be added with the builder methods.
    :param queue: the queue of every ``task`` and ``poll`` step that names none (the
        document carries it on each step; the format has no default queue).
    """

    def __init__(
        self,
        definition_id: str,
        *,
        version: str,
        input_schema: Mapping[str, Any] | None = None,
        failure_policy: FailurePolicy | str | None = None,
        deadline: Duration | None = None,
        limits: Mapping[str, Any] | None = None,
        steps: Sequence[Step] = (),
        queue: str | None = None,
    ) -> None:
        self.definition_id = _str(definition_id, "definition_id")
        self.version = _str(version, "version")
        self.input_schema = _schema(input_schema, "input_schema")
        if failure_policy is not None and not isinstance(failure_policy, str):
            raise TypeError("failure_policy: expected 'REVIEW' or 'FAIL_AFTER_SETTLED'")
        self.failure_policy = (
            failure_policy.value if isinstance(failure_policy, FailurePolicy) else failure_policy
        )
        self.deadline = _seconds(deadline, "deadline")
        self.limits = _schema(limits, "limits")
        self.steps: list[Step] = list(_steps(steps, "steps"))
        self.queue = _str(queue, "queue") if queue is not None else None

    # builder methods: each appends one top-level step and returns it

    def add(self, *steps: Step) -> Workflow:
        """Append already built steps; returns the workflow for chaining."""
        self.steps.extend(_steps(steps, "steps"))
        return self

    def _append(self, step: _S) -> _S:
        self.steps.append(step)
        return step

    def task(
        self,
        id: str,
        *,
        queue: str | None = None,
        handler: Handler,
        input: Any = None,
        output_schema: Mapping[str, Any] | None = None,
        retry: RetryPolicy | None = None,
        timeouts: Timeouts | None = None,
        trace_key: Any = None,
        resource_key: Any = None,
    ) -> TaskStep:
        """Append a ``task`` step (see ``TaskStep``) and return it."""
        step = TaskStep(
            id,
            queue=queue,
            handler=handler,
            input=input,
            output_schema=output_schema,
            retry=retry,
            timeouts=timeouts,
            trace_key=trace_key,
            resource_key=resource_key,
        )
        return self._append(step)

    def signal(
        self,
        id: str,
        *,
        name: str,
        correlation_key: Any,
        param_version: str | None = None,
        timeout: Duration | None = None,
    ) -> SignalStep:
        """Append a ``signal`` step (see ``SignalStep``) and return it."""
        step = SignalStep(
            id,
            name=name,
            correlation_key=correlation_key,
            param_version=param_version,
            timeout=timeout,
        )
        return self._append(step)

    def timer(self, id: str, *, duration: Duration) -> TimerStep:
        """Append a ``timer`` step and return it."""
        return self._append(TimerStep(id, duration=duration))

    def poll(
        self,
        id: str,
        *,
        queue: str | None = None,
        handler: Handler,
        max_rounds: int,
        interval: Duration,
        deadline: Duration,
        classify: Classify,
        input: Any = None,
        attempts_per_round: int | None = None,
        receipt: Receipt | None = None,
    ) -> PollStep:
        """Append a ``poll`` step (see ``PollStep``) and return it."""
        step = PollStep(
            id,
            queue=queue,
            handler=handler,
            input=input,
            max_rounds=max_rounds,
            interval=interval,
            deadline=deadline,
            attempts_per_round=attempts_per_round,
            classify=classify,
            receipt=receipt,
        )
        return self._append(step)

    def branch(self, id: str, cases: Sequence[Case | Default]) -> BranchStep:
        """Append a ``branch`` step and return it."""
        return self._append(BranchStep(id, cases))

    def parallel(self, id: str, branches: Mapping[str, Sequence[Step]]) -> ParallelStep:
        """Append a ``parallel`` step and return it."""
        return self._append(ParallelStep(id, branches))

    # documents

    def to_json(self) -> dict[str, JSON]:
        """The definition document, with only the fields that were set (a fresh copy)."""
        out: dict[str, JSON] = {
            "schema_version": SCHEMA_VERSION,
            "definition_id": self.definition_id,
            "version": self.version,
        }
        _put(out, "input_schema", self.input_schema)
        _put(out, "deadline_seconds", self.deadline)
        _put(out, "failure_policy", self.failure_policy)
        _put(out, "limits", self.limits)
        out["steps"] = [step.to_json() for step in self.steps]
        if self.queue is not None:
            from weave_sdk.contracts import fill_queue

            fill_queue(out["steps"], self.queue)
        check_exact(out)
        return copy.deepcopy(out)  # callers may edit the document; the workflow stays as built

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Workflow:
        """Read a definition document; raises ``DefinitionFormatError`` naming the JSON path.

        Third-party kinds become ``CustomStep``; unknown fields of built-in kinds and at the
        top level are refused, so ``from_json(d).to_json() == d`` for every accepted ``d``.
        """
        from weave_sdk._reader import read_workflow

        return read_workflow(document)

    def validate(self) -> list[Problem]:
        """Check the structural rules locally (see ``weave_sdk.validate``)."""
        from weave_sdk.contracts import check_handler_inputs
        from weave_sdk.validate import validate

        return validate(self) + check_handler_inputs(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Workflow) and self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]  # mutable builder: equal by content

    def __repr__(self) -> str:
        return (
            f"Workflow({self.definition_id!r}, version={self.version!r}, "
            f"steps={len(self.steps)})"
        )


Definition = Workflow
"""Another name for ``Workflow``, for code that speaks of published definitions."""


__all__ = [
    "BUILTIN_KINDS",
    "SCHEMA_VERSION",
    "BranchStep",
    "Case",
    "Classify",
    "CustomStep",
    "Default",
    "Definition",
    "Duration",
    "FailurePolicy",
    "Handler",
    "ParallelStep",
    "PollStep",
    "Receipt",
    "RetryPolicy",
    "SignalStep",
    "Step",
    "TaskStep",
    "Timeouts",
    "TimerStep",
    "Workflow",
]
