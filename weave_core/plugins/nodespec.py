"""The node plugin spec, version 1: the one contract every node kind implements (R-4.8).

A node kind is a class registered through the pluggy hook ``weave_register_node_kinds``
(entry point group ``weave.nodes``). The built-in kinds in ``weave_nodes`` use exactly this
path. A kind is pure: given its step's validated config, a read-only scope and a fact, it
returns a value (a command, a step result, an output). Only the kernel touches storage.

Lifecycle of one step, and which method the kernel calls:

1. publish: ``config_model`` validates the kind's fields; ``blocks`` exposes child step lists
   of composites; ``check`` adds kind-specific problems; ``output_schema`` tells consumers
   what the output looks like.
2. activation: ``activate`` returns a ``Command`` (leaf kinds: what to persist and wait for;
   composite kinds: which child blocks to enter, with the decision to save).
3. settlement: ``interpret`` turns a settled fact (task result, signal, timer, timeout) into
   a ``StepResult`` (leaf kinds); ``combine`` builds a composite's output once every entered
   block succeeded.

Versioning: ``NODE_SPEC_VERSION`` rises on any incompatible change to this module. A kind
declares the version it was written for in ``spec_version``; the plugin host refuses kinds
written for a version it does not serve.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any, ClassVar, Literal, Protocol

import pluggy
from pydantic import BaseModel

from weave_core.foundation.exactjson import JSON

NODE_SPEC_VERSION = 1
"""The version of this spec; kinds declare the one they implement in ``spec_version``."""

PROJECT_NAME = "weave"
ENTRY_POINT_GROUP = "weave.nodes"
"""Entry point group through which installed packages expose node plugins."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

JsonSchema = Mapping[str, Any]
"""A JSON Schema object describing a value; ``None`` where a type is unknown (any value)."""


# --- definition time -----------------------------------------------------------------


class CheckContext(Protocol):
    """What a kind may ask and report while its step is validated at publish time."""

    @property
    def path(self) -> str:
        """JSON path of the step being checked, e.g. ``$.steps[2]``."""
        ...

    def problem(self, path: str, code: str, message: str) -> None:
        """Report a problem at ``path`` (relative to the step, e.g. ``.cases[1].when``)."""
        ...

    def check_template(self, template: JSON, path: str) -> None:
        """Check a value template: every ``$ref`` parses, resolves and is visible here."""
        ...

    def check_condition(self, condition: JSON, path: str) -> None:
        """Check a condition: closed vocabulary, arity, and operand types of its references."""
        ...

    def limit(self, name: str) -> int:
        """The engine's limit called ``name`` (see ``weave_core.foundation.limits``)."""
        ...

    def schema_of(self, template: JSON) -> JsonSchema | None:
        """The declared JSON Schema of a literal or a reference (``None`` when unknown).

        For a reference: the producer's output schema (or the input schema) followed along
        the reference's path. Kinds use it for type checks, e.g. exhaustive branch cases.
        """
        ...


BlockPolicy = Literal["none", "all", "one"]
"""How many child blocks run: leaf kinds ``none``; ``all`` (parallel); exactly ``one`` (branch)."""


# --- run time: what a kind reads -------------------------------------------------------


class Scope(Protocol):
    """Read-only data visible to a step: the instance input and saved SUCCEEDED outputs."""

    def resolve(self, template: JSON) -> JSON:
        """Replace every ``$ref`` in ``template`` by its saved value, exactly.

        Raises ``PlanRejectedError`` when a referenced step is not SUCCEEDED or a path is
        missing where the definition promised it.
        """
        ...

    def evaluate(self, condition: JSON) -> bool:
        """Evaluate a condition with exact rational comparison of numbers."""
        ...


# --- run time: what a kind returns -----------------------------------------------------


@dataclass(frozen=True)
class RetryPolicy:
    """The dispatch layer's retry budget for one task (per poll round for ``poll``)."""

    max_attempts: int = 3
    backoff_seconds: Decimal = Decimal(1)
    backoff_multiplier: Decimal = Decimal(2)
    max_backoff_seconds: Decimal = Decimal(300)


@dataclass(frozen=True)
class Timeouts:
    """Dispatch timeouts in seconds; ``None`` means the engine default."""

    schedule_to_start: int | None = None
    start_to_close: int | None = None
    heartbeat: int | None = None


@dataclass(frozen=True)
class TaskCommand:
    """Create one dispatch task. Parameters to persist, never an execution permit."""

    queue: str
    handler: str
    handler_version: str
    idempotent: bool
    input: JSON
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeouts: Timeouts = field(default_factory=Timeouts)
    trace_key: str | None = None
    resource_key: str | None = None


@dataclass(frozen=True)
class WaitSignalCommand:
    """Wait durably for one matching signal (name, frozen correlation key, param version)."""

    name: str
    correlation_key: str
    param_version: str = "1"
    timeout_seconds: int | None = None


@dataclass(frozen=True)
class TimerCommand:
    """Wait durably until ``seconds`` after activation (database time)."""

    seconds: int


@dataclass(frozen=True)
class PollCommand:
    """A bounded repeated query: one task per round, rounds spaced by ``interval_seconds``."""

    task: TaskCommand
    max_rounds: int
    interval_seconds: int
    deadline_seconds: int
    receipt: WaitSignalCommand | None = None


@dataclass(frozen=True)
class EnterBlocks:
    """Composite activation: enter these child blocks; save ``decision`` so it is made once."""

    blocks: tuple[str, ...]
    decision: JSON = None


Command = TaskCommand | WaitSignalCommand | TimerCommand | PollCommand | EnterBlocks


class FactKind(StrEnum):
    """What settled for a waiting leaf step."""

    TASK_SUCCEEDED = "task.succeeded"
    TASK_FAILED = "task.failed"
    TASK_CANCELLED = "task.cancelled"
    TASK_NEEDS_REVIEW = "task.needs_review"
    SIGNAL = "signal"
    TIMER = "timer"
    TIMEOUT = "timeout"


@dataclass(frozen=True)
class Fact:
    """A settled fact for one activation, taken from a frozen snapshot (never current state)."""

    kind: FactKind
    payload: JSON = None
    """Task output, signal payload, or the error object of a failed task."""
    effect_unknown: bool = False
    source: str = "task"
    """``task`` for the step's own task, ``receipt`` for a poll's receipt signal."""


class StepOutcome(StrEnum):
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    NEEDS_REVIEW = "NEEDS_REVIEW"
    CONTINUE = "CONTINUE"
    """Still waiting (a poll result that is PENDING): wake again after ``wake_after_seconds``."""


@dataclass(frozen=True)
class StepResult:
    """What a fact means for the step; the kernel saves it and asks the core what follows."""

    outcome: StepOutcome
    output: JSON = None
    reason: str | None = None
    """A stable review or failure reason code, e.g. ``output_contract_violated``."""
    wake_after_seconds: int | None = None


# --- the kind itself ----------------------------------------------------------------


class NodeKind:
    """Base class of every node kind (built-in or third-party).

    Subclasses set ``kind``, ``config_model`` and ``block_policy`` and override the methods
    their policy needs. Instances are stateless and shared across threads.
    """

    kind: ClassVar[str]
    """The ``kind`` string of definition steps this class serves; unique across plugins."""
    spec_version: ClassVar[int] = NODE_SPEC_VERSION
    config_model: ClassVar[type[BaseModel]]
    """Validates the step's fields other than ``id`` and ``kind`` (unknown fields refused)."""
    block_policy: ClassVar[BlockPolicy] = "none"

    # definition time

    def blocks(self, config: BaseModel) -> Mapping[str, Sequence[JSON]]:
        """Child step lists of a composite, by block name, in a stable order. Leaves: none."""
        return {}

    def block_path(self, config: BaseModel, block: str) -> str:
        """JSON path, relative to the step, of ``block``'s step list (for problem paths)."""
        return f".{block}"

    def check(self, config: BaseModel, ctx: CheckContext) -> None:
        """Report kind-specific problems (references, conditions, limits) through ``ctx``."""

    def output_schema(
        self, config: BaseModel, block_outputs: Mapping[str, JsonSchema | None]
    ) -> JsonSchema | None:
        """Describe the step's output for type checks of its consumers (``None``: any)."""
        return None

    # run time (pure: no I/O, no clock, no randomness)

    def activate(self, config: BaseModel, scope: Scope) -> Command:
        """Decide what activation means for this step."""
        raise NotImplementedError(f"node kind {self.kind!r} does not implement activate()")

    def interpret(self, config: BaseModel, fact: Fact) -> StepResult:
        """Turn a settled fact into a step result (leaf kinds)."""
        raise NotImplementedError(f"node kind {self.kind!r} does not implement interpret()")

    def combine(self, config: BaseModel, decision: JSON, block_outputs: Mapping[str, JSON]) -> JSON:
        """Build a composite's output from its entered blocks' outputs (last step of each)."""
        raise NotImplementedError(f"node kind {self.kind!r} does not implement combine()")


class NodeSpec:
    """The hook specifications of spec version 1 (every hook is prefixed ``weave_``)."""

    @hookspec
    def weave_register_node_kinds(self) -> list[type[NodeKind]]:  # type: ignore[empty-body]  # a spec has no body
        """Return the node kind classes this plugin provides.

        Called once when a plugin host is built. Every returned class must subclass
        ``NodeKind``, declare a ``spec_version`` the host serves, and use a ``kind`` string
        no other plugin registers; otherwise the host refuses the plugin by name.

        :return: the classes, in any order; an empty list is allowed.
        """


__all__ = [
    "ENTRY_POINT_GROUP",
    "NODE_SPEC_VERSION",
    "BlockPolicy",
    "CheckContext",
    "Command",
    "EnterBlocks",
    "Fact",
    "FactKind",
    "JsonSchema",
    "NodeKind",
    "NodeSpec",
    "PollCommand",
    "RetryPolicy",
    "Scope",
    "StepOutcome",
    "StepResult",
    "TaskCommand",
    "Timeouts",
    "TimerCommand",
    "WaitSignalCommand",
    "hookimpl",
    "hookspec",
]
