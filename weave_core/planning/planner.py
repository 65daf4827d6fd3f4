"""The planner: one pure walk over a Program and a Snapshot that yields a Plan.

The walk visits the step tree in one fixed order (document order; a composite's entered
blocks before its unselected ones) and works on a private overlay of the snapshot: each
decision it makes is applied to the overlay at once, so later steps see it (a COMPLETE lets
the successor activate in the same plan). Because the order is fixed and a decision depends
only on the overlay, cutting the walk at any budget and resuming from the applied snapshot
yields the same decisions: budget invariance. When the budget is spent the walk goes on
without deciding, only validating, so a bad snapshot is refused however small the budget.

No I/O, no clock, no randomness; only kinds' pure ``activate``/``combine`` are called.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal, TypeVar

from weave_core.definitions.expressions import (
    ExpressionTypeError,
    MissingValueError,
    ValueTooLargeError,
)
from weave_core.foundation.exactjson import JSON
from weave_core.planning.plan import Decision, DecisionKind, Plan, PlanRejectedError, RejectReason
from weave_core.planning.scope import SkippedInputError, StepScope, reject
from weave_core.planning.snapshot import PASSABLE, ROOT, Entered, Phase, Snapshot, StepState
from weave_core.planning.values import check_size, same
from weave_core.plugins.nodespec import EnterBlocks

if TYPE_CHECKING:
    from weave_core.planning.program import Program, _Node

T = TypeVar("T")
_Mode = Literal["run", "verify", "inert"]

_ACTIVE = StepState(Phase.ACTIVE)
_SKIPPED = StepState(Phase.SKIPPED)
_SUCCEEDED = Phase.SUCCEEDED
_SKIPPED_PHASE = Phase.SKIPPED
_ACTIVE_PHASE = Phase.ACTIVE
_ROOT_ENTERED = Entered(None, ("steps",))


class _Planner:
    __slots__ = (
        "allow_new", "decisions", "input", "limit", "max_bytes", "more", "nodes", "order",
        "parents", "states",
    )

    def __init__(self, program: Program, snapshot: Snapshot, limit: int, allow_new: bool) -> None:
        self.nodes: Mapping[str, _Node] = program._nodes
        self.order = program._order
        self.parents = program._parents
        self.input = snapshot.input
        self.states: dict[str, StepState] = dict(snapshot.steps)
        self.limit = limit
        self.allow_new = allow_new
        self.max_bytes = program.max_value_bytes
        self.decisions: list[Decision] = []
        self.more = False

    # --- the walk ------------------------------------------------------------------

    def run(self) -> Plan:
        self._check_records()
        root = self.states.get(ROOT)
        if root is None:
            self._run_composite(ROOT, StepState(Phase.ACTIVE, entered=_ROOT_ENTERED))
        elif root.phase is _SUCCEEDED:
            self._verify_done(ROOT, root)
        else:
            raise reject(
                RejectReason.INPUT_STATE_INVALID, ROOT,
                f"$root is recorded only once the workflow SUCCEEDED, not as {root.phase.value}",
            )
        return Plan(tuple(self.decisions), self.more)

    def _check_records(self) -> None:
        """Every recorded step exists, and its composite was activated (recorded) too."""
        nodes, states, parents = self.nodes, self.states, self.parents
        for step_id in states:
            parent = parents.get(step_id)
            if parent is None:
                if step_id not in nodes:
                    break
            elif parent not in states:
                break
        else:
            return
        # Refuse the same step whatever order the snapshot lists its steps in.
        unknown = sorted(s for s in states if s not in nodes)
        if unknown:
            raise reject(
                RejectReason.UNREACHABLE_EXECUTION, unknown[0],
                f"step {unknown[0]!r} is recorded but the definition has no such step",
            )
        for step_id in self.order:
            parent = nodes[step_id].parent
            if step_id in states and parent is not None and parent != ROOT and parent not in states:
                raise reject(
                    RejectReason.UNREACHABLE_EXECUTION, step_id,
                    f"step {step_id!r} is recorded under {parent!r}, which was never activated",
                )

    def _room(self) -> bool:
        if len(self.decisions) < self.limit:
            return True
        self.more = True
        return False

    def _run_block(self, ids: tuple[str, ...]) -> tuple[bool, JSON]:
        """Advance one sequence; return (every step settled, the block's output)."""
        states, nodes = self.states, self.nodes
        blocked = False
        settled = True
        output: JSON = None
        for step_id in ids:
            state = states.get(step_id)
            if blocked:
                if state is not None:
                    raise reject(
                        RejectReason.UNREACHABLE_EXECUTION, step_id,
                        f"step {step_id!r} is recorded after an unfinished predecessor",
                    )
                continue
            if state is None:
                state = self._activate(step_id)
                if state is None:
                    blocked = True
                    continue
            node = nodes[step_id]
            composite = node.policy != "none"
            phase = state.phase
            if phase is _SUCCEEDED:
                if composite:
                    self._verify_done(step_id, state)
                output = state.output
            elif phase is _SKIPPED_PHASE:
                if composite:
                    settled = self._skip_children(node, "run") and settled
                output = None
            elif phase is _ACTIVE_PHASE and composite:
                state = self._run_composite(step_id, state)
                if state.phase is _SUCCEEDED:
                    output = state.output
                else:
                    blocked = True
            else:  # a waiting leaf, or FAILED / NEEDS_REVIEW / CANCELLED
                if composite and phase is not _ACTIVE_PHASE:
                    self._inert_children(node, state)
                blocked = True
        return (settled and not blocked), output

    def _activate(self, step_id: str) -> StepState | None:
        if not self.allow_new or not self._room():
            return None
        node = self.nodes[step_id]
        kind, config = node.kind, node.config
        assert kind is not None and config is not None
        command = self._call(step_id, lambda: kind.activate(config, StepScope(self, node)))
        if node.policy == "none":
            if isinstance(command, EnterBlocks):
                raise reject(
                    RejectReason.INVALID_COMMAND, step_id,
                    f"leaf kind {node.kind_name!r} returned EnterBlocks",
                )
            state = _ACTIVE
        else:
            if not isinstance(command, EnterBlocks):
                raise reject(
                    RejectReason.INVALID_COMMAND, step_id,
                    f"composite kind {node.kind_name!r} returned {type(command).__name__}, "
                    "not EnterBlocks",
                )
            entered = Entered(command.decision, tuple(command.blocks))
            self._check_entered(node, entered, RejectReason.INVALID_COMMAND)
            state = StepState(Phase.ACTIVE, entered=entered)
        self.decisions.append(Decision(DecisionKind.ACTIVATE, step_id, command))
        self.states[step_id] = state
        return state

    def _run_composite(self, step_id: str, state: StepState) -> StepState:
        node = self.nodes[step_id]
        entered = self._entered(node, state)
        outputs: dict[str, JSON] = {}
        done = True
        for block, ids in node.blocks.items():
            if block in entered.blocks:
                block_done, outputs[block] = self._run_block(ids)
                done = block_done and done
        for block, ids in node.blocks.items():
            if block not in entered.blocks:
                done = self._skip_block(ids, "run") and done
        if not done or not self._room():
            return state
        output = self._combine(node, entered, outputs)
        try:
            check_size(output, self.max_bytes, f"the output of {step_id!r}")
        except ValueTooLargeError as exc:
            raise reject(RejectReason.VALUE_TOO_LARGE, step_id, exc.message) from exc
        self.decisions.append(Decision(DecisionKind.COMPLETE, step_id, output=output))
        done_state = StepState(Phase.SUCCEEDED, output, entered, state.version)
        self.states[step_id] = done_state
        return done_state

    # --- paths that will never run ------------------------------------------------------

    def _skip_block(self, ids: tuple[str, ...], mode: _Mode) -> bool:
        """Steps of a path that will never run: SKIPPED, or SKIP them (``mode`` ``run``).

        ``verify`` (under a SUCCEEDED composite) refuses a step not yet skipped; ``inert``
        (under a failed or cancelled composite) accepts it. Returns whether all are SKIPPED.
        """
        states = self.states
        all_skipped = True
        for step_id in ids:
            state = states.get(step_id)
            if state is None:
                if mode == "verify":
                    raise reject(
                        RejectReason.UNSETTLED_CHILD, step_id,
                        f"step {step_id!r} of an unselected path is not SKIPPED under a "
                        "completed composite",
                    )
                if mode == "inert" or not self._room():
                    all_skipped = False
                    continue  # its descendants are unrecorded too (_check_records)
                self.decisions.append(Decision(DecisionKind.SKIP, step_id))
                states[step_id] = _SKIPPED
            elif state.phase is not _SKIPPED_PHASE:
                raise reject(
                    RejectReason.UNREACHABLE_EXECUTION, step_id,
                    f"step {step_id!r} is {state.phase.value} in a path that was not selected",
                )
            node = self.nodes[step_id]
            if node.blocks:
                all_skipped = self._skip_children(node, mode) and all_skipped
        return all_skipped

    def _skip_children(self, node: _Node, mode: _Mode) -> bool:
        done = True
        for ids in node.blocks.values():
            done = self._skip_block(ids, mode) and done
        return done

    # --- checks of recorded composites ------------------------------------------------

    def _verify_done(self, step_id: str, state: StepState) -> None:
        """A SUCCEEDED composite: every child settled, and its output is what they make."""
        node = self.nodes[step_id]
        if node.policy == "none":
            return
        entered = self._entered(node, state)
        outputs: dict[str, JSON] = {}
        for block, ids in node.blocks.items():
            if block in entered.blocks:
                outputs[block] = self._verify_block(ids)
            else:
                self._skip_block(ids, "verify")
        if not same(self._combine(node, entered, outputs), state.output):
            raise reject(
                RejectReason.FORGED_OUTPUT, step_id,
                f"the saved output of {step_id!r} differs from combining its children's outputs",
            )

    def _verify_block(self, ids: tuple[str, ...]) -> JSON:
        output: JSON = None
        for step_id in ids:
            state = self.states.get(step_id)
            if state is None or state.phase not in PASSABLE:
                phase = "never activated" if state is None else state.phase.value
                raise reject(
                    RejectReason.UNSETTLED_CHILD, step_id,
                    f"step {step_id!r} is {phase} under a completed composite",
                )
            if state.phase is _SUCCEEDED:
                self._verify_done(step_id, state)
                output = state.output
            else:
                self._skip_children(self.nodes[step_id], "verify")
                output = None
        return output

    def _inert_children(self, node: _Node, state: StepState) -> None:
        """Children of a FAILED, NEEDS_REVIEW or CANCELLED composite: only where they may be."""
        entered = state.entered
        for block, ids in node.blocks.items():
            if entered is not None and block in entered.blocks:
                self._inert_block(ids)
            else:
                self._skip_block(ids, "inert")

    def _inert_block(self, ids: tuple[str, ...]) -> None:
        blocked = False
        for step_id in ids:
            state = self.states.get(step_id)
            if blocked or state is None:
                if state is not None:
                    raise reject(
                        RejectReason.UNREACHABLE_EXECUTION, step_id,
                        f"step {step_id!r} is recorded after an unfinished predecessor",
                    )
                blocked = True
                continue
            node = self.nodes[step_id]
            if state.phase is _SUCCEEDED:
                self._verify_done(step_id, state)
            elif state.phase is _SKIPPED_PHASE:
                self._skip_children(node, "inert")
            else:
                if node.blocks:
                    if state.phase is _ACTIVE_PHASE:
                        self._entered(node, state)  # an active composite has its decision
                    self._inert_children(node, state)
                blocked = True

    # --- helpers -----------------------------------------------------------------------

    def _entered(self, node: _Node, state: StepState) -> Entered:
        if node.kind is None:
            return _ROOT_ENTERED
        entered = state.entered
        if entered is None:
            raise reject(
                RejectReason.INPUT_STATE_INVALID, node.step_id,
                f"composite {node.step_id!r} is {state.phase.value} without its saved decision",
            )
        self._check_entered(node, entered, RejectReason.INPUT_STATE_INVALID)
        return entered

    @staticmethod
    def _check_entered(node: _Node, entered: Entered, reason: RejectReason) -> None:
        blocks = entered.blocks
        problem = None
        if len(set(blocks)) != len(blocks) or not set(blocks) <= node.blocks.keys():
            problem = f"enters unknown or repeated blocks {list(blocks)}"
        elif node.policy == "all" and len(blocks) != len(node.blocks):
            problem = f"must enter all of {list(node.blocks)}, not {list(blocks)}"
        elif node.policy == "one" and len(blocks) != 1:
            problem = f"must enter exactly one block, not {list(blocks)}"
        if problem is not None:
            raise reject(reason, node.step_id, f"composite {node.step_id!r} {problem}")

    def _combine(self, node: _Node, entered: Entered, outputs: dict[str, JSON]) -> JSON:
        kind, config = node.kind, node.config
        if kind is None or config is None:  # $root: the last top-level step's output
            return outputs["steps"]
        return self._call(node.step_id, lambda: kind.combine(config, entered.decision, outputs))

    @staticmethod
    def _call(step_id: str, call: Callable[[], T]) -> T:
        """Run a kind's pure method, turning data errors into whole-plan rejections."""
        try:
            return call()
        except PlanRejectedError as exc:
            if exc.step_id is None:
                raise PlanRejectedError(
                    exc.reason, exc.message, step_id=step_id, details=exc.details
                ) from exc
            raise
        except SkippedInputError as exc:
            raise reject(RejectReason.INPUT_STATE_INVALID, step_id, exc.message) from exc
        except ValueTooLargeError as exc:
            raise reject(RejectReason.VALUE_TOO_LARGE, step_id, exc.message) from exc
        except (MissingValueError, ExpressionTypeError) as exc:
            raise reject(RejectReason.TYPE_MISMATCH, step_id, exc.message) from exc


def make_plan(program: Program, snapshot: Snapshot, limit: int, allow_new: bool) -> Plan:
    """Plan from ``snapshot`` (see :meth:`weave_core.planning.program.Program.plan`)."""
    return _Planner(program, snapshot, limit, allow_new).run()


__all__ = ["make_plan"]
