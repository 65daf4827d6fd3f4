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
from typing import TYPE_CHECKING, Any

from weave_sdk import docformat
from weave_sdk._definition_fields import (
    Classify,
    Duration,
    FailurePolicy,
    Handler,
    Receipt,
    RetryPolicy,
    Timeouts,
    _put,
    _schema,
    _seconds,
    _str,
)
from weave_sdk._definition_steps import (
    _S,
    BUILTIN_KINDS,
    BranchStep,
    Case,
    CustomStep,
    Default,
    ParallelStep,
    PollStep,
    SignalStep,
    Step,
    TaskStep,
    TimerStep,
    _steps,
)
from weave_sdk.exactjson import JSON, check_exact

if TYPE_CHECKING:
    from weave_sdk.errors import Problem

SCHEMA_VERSION = docformat.SCHEMA_VERSION
"""The definition format this SDK writes."""


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
