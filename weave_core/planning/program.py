"""Compiled definitions: an immutable, thread-safe step tree the decision core plans over.

``compile`` validates a definition document, takes its canonical deep copy and builds one
``_Node`` per step (kind, validated config, child blocks, parent, and the set of steps whose
outputs it may read). Nothing in a ``Program`` changes after construction, and nothing
handed out (``document()``, ``config()``) aliases its internals, so one Program is shared
by every thread and every instance pinned to that definition version (R-6.3).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from pydantic import BaseModel

from weave_core.definitions.format import ValidatedDefinition, validate_definition
from weave_core.definitions.validation import StepNode
from weave_core.foundation.exactjson import JSON, canonicalize, content_hash
from weave_core.foundation.limits import DEFAULT_LIMITS, Limits
from weave_core.planning.plan import MAX_PLAN_LIMIT, Plan, PlanRejectedError, RejectReason
from weave_core.planning.planner import make_plan
from weave_core.planning.snapshot import ROOT, Snapshot
from weave_core.plugins.host import PluginHost
from weave_core.plugins.nodespec import BlockPolicy, Fact, NodeKind, StepOutcome, StepResult

ROOT_BLOCK = "steps"
"""The one block of the ``$root`` pseudo-step: the definition's top-level step list."""


@dataclass(frozen=True, slots=True)
class _Node:
    """One step of the compiled tree (``$root`` included, with ``kind`` ``None``)."""

    step_id: str
    kind_name: str
    kind: NodeKind | None
    config: BaseModel | None
    policy: BlockPolicy
    parent: str | None
    block: str | None
    blocks: Mapping[str, tuple[str, ...]]
    visible: frozenset[str]
    """Steps whose outputs this step may read: earlier steps of its block and of every
    enclosing block, with their descendants (so a parallel branch never sees a sibling's)."""


class Program:
    """An immutable compiled definition. Build it with :func:`compile`."""

    __slots__ = (
        "_content_hash", "_document", "_limits", "_max_value_bytes", "_nodes", "_order", "_parents",
        "_queues",
    )

    def __init__(self, validated: ValidatedDefinition, host: PluginHost, limits: Limits) -> None:
        """Build from a validated definition (use :func:`compile` or :meth:`from_validated`)."""
        self._document = canonicalize(validated.document)  # a private copy
        self._content_hash = content_hash(self._document)
        self._limits = limits
        # A definition may tighten the engine's limit in its own "limits" object.
        self._max_value_bytes = min(
            limits.max_value_bytes, validated.limits.get("max_value_bytes", limits.max_value_bytes)
        )
        nodes: dict[str, _Node] = {}
        order: list[str] = []
        top = _build_block(validated.steps, ROOT, ROOT_BLOCK, frozenset(), host, nodes, order)
        nodes[ROOT] = _Node(
            ROOT, ROOT, None, None, "all", None, None,
            MappingProxyType({ROOT_BLOCK: top}), frozenset(),
        )
        self._nodes: Mapping[str, _Node] = MappingProxyType(nodes)
        self._order = tuple(order)
        # Steps inside a composite -> that composite (top-level steps are absent).
        self._parents: Mapping[str, str] = MappingProxyType(
            {n.step_id: n.parent for n in nodes.values() if n.parent not in (None, ROOT)}
        )
        self._queues: tuple[str, ...] | None = None

    @classmethod
    def from_validated(
        cls, validated: ValidatedDefinition, host: PluginHost, limits: Limits = DEFAULT_LIMITS
    ) -> Program:
        """Compile a definition that ``validate_definition`` already accepted."""
        return cls(validated, host, limits)

    # --- reading ---------------------------------------------------------------------

    @property
    def definition_id(self) -> str:
        return str(self._document["definition_id"])

    @property
    def version(self) -> str:
        return str(self._document["version"])

    @property
    def content_hash(self) -> str:
        """SHA-256 of the canonical document (the identity of its content)."""
        return self._content_hash

    @property
    def limits(self) -> Limits:
        return self._limits

    @property
    def max_value_bytes(self) -> int:
        """Largest resolved input or combined output (the engine's or the definition's limit)."""
        return self._max_value_bytes

    def document(self) -> JSON:
        """A fresh deep copy of the canonical document."""
        return canonicalize(self._document)

    def field(self, name: str) -> JSON:
        """A copy of one top-level field of the document (None when absent): a start
        reads three of them, and copying the whole document for each cost a fifth of
        the start's CPU."""
        assert isinstance(self._document, dict)
        return canonicalize(self._document.get(name))

    def queues(self) -> tuple[str, ...]:
        """The sorted queues the leaf steps name in their config (computed once)."""
        if self._queues is None:
            found = {getattr(node.config, "queue", None) for step_id, node in
                     self._nodes.items() if step_id in self._order
                     and not self.is_composite(step_id) and node.config is not None}
            self._queues = tuple(sorted(q for q in found if isinstance(q, str)))
        return self._queues

    def step_ids(self) -> tuple[str, ...]:
        """Every step id, in document (pre-)order; ``$root`` excluded."""
        return self._order

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def kind_of(self, step_id: str) -> str:
        return self._node(step_id).kind_name

    def config(self, step_id: str) -> BaseModel:
        """A deep copy of the step's validated config (changing it never changes the Program)."""
        config = self._node(step_id).config
        if config is None:
            raise KeyError(f"{step_id!r} has no config")
        return config.model_copy(deep=True)

    def config_read_only(self, step_id: str) -> BaseModel:
        """The step's validated config itself, not a copy: for a caller that only reads
        it (a start checks every step's spans; a deep copy per step cost a tenth of the
        start's CPU). Never change it: :meth:`config` gives a copy to change."""
        config = self._node(step_id).config
        if config is None:
            raise KeyError(f"{step_id!r} has no config")
        return config

    def parent_of(self, step_id: str) -> tuple[str, str] | None:
        """``(composite id, block name)`` holding the step; ``$root``'s block is ``steps``."""
        node = self._node(step_id)
        if node.parent is None or node.block is None:
            return None
        return node.parent, node.block

    def blocks_of(self, step_id: str) -> Mapping[str, tuple[str, ...]]:
        """Child step ids of a composite, by block name (empty for leaves)."""
        return self._node(step_id).blocks

    def is_composite(self, step_id: str) -> bool:
        return self._node(step_id).policy != "none"

    def _node(self, step_id: str) -> _Node:
        try:
            return self._nodes[step_id]
        except KeyError:
            raise KeyError(f"no step {step_id!r} in {self.definition_id}@{self.version}") from None

    # --- deciding --------------------------------------------------------------------

    def plan(self, snapshot: Snapshot, limit: int = MAX_PLAN_LIMIT, allow_new: bool = True) -> Plan:
        """Decide what follows ``snapshot``: at most ``limit`` decisions (1 to 32).

        ``allow_new=False`` (paused, gated, cancelled, past deadline) plans no ACTIVATE at
        all; composites and the root may still COMPLETE and unselected paths be SKIPPED.
        Raises ``PlanRejectedError`` when the snapshot cannot be planned from (never a
        partial plan) and ``ValueError`` for a limit out of range.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or not 0 < limit <= MAX_PLAN_LIMIT:
            raise ValueError(f"limit must be an integer from 1 to {MAX_PLAN_LIMIT}, not {limit!r}")
        return make_plan(self, snapshot, limit, allow_new)

    def interpret(self, step_id: str, fact: Fact) -> StepResult:
        """What a settled fact means for a leaf step (delegated to its kind; a kind that
        does not implement ``interpret`` gives ``NEEDS_REVIEW``/``kind_cannot_interpret``)."""
        node = self._nodes.get(step_id)
        if node is None or node.kind is None or node.config is None or node.policy != "none":
            raise PlanRejectedError(
                RejectReason.UNREACHABLE_EXECUTION,
                f"{step_id!r} is not a leaf step of {self.definition_id}@{self.version}: "
                "only leaf steps receive facts",
                step_id=step_id,
            )
        try:
            return node.kind.interpret(node.config, fact)
        except NotImplementedError:
            # A kind that cannot read facts is a plugin defect: its step goes to review,
            # never to a silent success, whichever part of the runtime delivered the fact.
            return StepResult(StepOutcome.NEEDS_REVIEW, reason="kind_cannot_interpret")


def _build_block(
    steps: Sequence[StepNode],
    parent: str,
    block: str,
    inherited: frozenset[str],
    host: PluginHost,
    nodes: dict[str, _Node],
    order: list[str],
) -> tuple[str, ...]:
    ids: list[str] = []
    earlier: set[str] = set()  # earlier siblings and their descendants
    for step in steps:
        kind = host.kind(step.kind)
        if kind is None:  # validation refuses unknown kinds; a host swap must not slip by
            raise KeyError(f"step {step.id!r}: no plugin serves kind {step.kind!r}")
        visible = inherited | earlier
        order.append(step.id)
        first_child = len(order)
        blocks = {
            child.name: _build_block(child.steps, step.id, child.name, visible, host, nodes, order)
            for child in step.blocks
        }
        nodes[step.id] = _Node(
            step.id, kind.kind, kind, step.config.model_copy(deep=True), kind.block_policy,
            parent, block, MappingProxyType(blocks), visible,
        )
        ids.append(step.id)
        earlier.add(step.id)
        earlier.update(order[first_child:])
    return tuple(ids)


def compile(document: JSON, host: PluginHost, limits: Limits = DEFAULT_LIMITS) -> Program:
    """Validate ``document`` and compile it into an immutable :class:`Program`.

    Raises ``weave_core.foundation.errors.ValidationError`` listing every problem of the document.
    """
    return Program(validate_definition(document, host, limits), host, limits)


__all__ = ["ROOT", "ROOT_BLOCK", "Program", "compile"]
