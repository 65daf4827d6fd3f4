"""What a kind's ``activate`` reads while the planner walks: the input and the SUCCEEDED
outputs of the steps visible from its step, resolved and bounded in size."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from weave_core.definitions.expressions import MissingValueError, Ref, evaluate, follow, resolve
from weave_core.foundation.exactjson import JSON
from weave_core.planning.plan import PlanRejectedError, RejectReason
from weave_core.planning.snapshot import Phase, StepState
from weave_core.planning.values import check_size

if TYPE_CHECKING:
    from weave_core.planning.program import _Node


class PlannerState(Protocol):
    """The part of the planner's overlay a scope reads."""

    @property
    def input(self) -> JSON: ...

    @property
    def states(self) -> Mapping[str, StepState]: ...

    @property
    def max_bytes(self) -> int: ...


class SkippedInputError(MissingValueError):
    """A reference reads a SKIPPED step: absent for ``exists``, a rejection elsewhere."""


def reject(reason: RejectReason, step_id: str | None, message: str) -> PlanRejectedError:
    return PlanRejectedError(reason, message, step_id=step_id)


class StepScope:
    """The read-only view a kind's ``activate`` gets: input and visible SUCCEEDED outputs."""

    __slots__ = ("_node", "_planner")

    def __init__(self, planner: PlannerState, node: _Node) -> None:
        self._planner = planner
        self._node = node

    def _lookup(self, ref: Ref) -> JSON:
        if ref.root == "input":
            return follow(self._planner.input, ref.path, ref.text)
        source = ref.step_id
        assert source is not None
        if source not in self._node.visible:
            raise reject(
                RejectReason.INPUT_STATE_INVALID, self._node.step_id,
                f"{ref.text}: step {source!r} is not visible from {self._node.step_id!r}",
            )
        state = self._planner.states.get(source)
        if state is not None and state.phase is Phase.SUCCEEDED:
            return follow(state.output, ref.path, ref.text)
        if state is not None and state.phase is Phase.SKIPPED:
            raise SkippedInputError(f"{ref.text}: step {source!r} was skipped")
        phase = "never activated" if state is None else state.phase.value
        raise reject(
            RejectReason.INPUT_STATE_INVALID, self._node.step_id,
            f"{ref.text}: input step {source!r} is {phase}, not SUCCEEDED",
        )

    def resolve(self, template: JSON) -> JSON:
        value = resolve(template, self._lookup)
        check_size(value, self._planner.max_bytes, "constructed value")
        return value

    def evaluate(self, condition: JSON) -> bool:
        return evaluate(condition, self._lookup)


__all__ = ["PlannerState", "SkippedInputError", "StepScope", "reject"]
