"""The instance snapshot the decision core plans from: input and saved step states.

A snapshot is what the kernel read and locked in the advance transaction (R-6.3): the
instance input and, per step that was ever activated, its phase, its saved SUCCEEDED output,
the saved decision of a composite and the step's state version. A step absent from
``steps`` was never activated. The JSON form (``to_json`` / ``from_json``) is exact and
lossless, so a plan made from a snapshot read back from JSON is identical (R-6.4: any node
continues from the saved records).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from weave_core.foundation.errors import WeaveError
from weave_core.foundation.exactjson import JSON

ROOT = "$root"
"""Step id of the whole workflow: its COMPLETE decision completes the instance."""


class Phase(StrEnum):
    """Where a recorded step is. A never-activated step has no record at all."""

    ACTIVE = "ACTIVE"
    """Activated: waiting for its task, signal or time (leaf) or for its children (composite)."""
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"
    CANCELLED = "CANCELLED"
    NEEDS_REVIEW = "NEEDS_REVIEW"


PASSABLE = frozenset({Phase.SUCCEEDED, Phase.SKIPPED})
"""Phases after which the next step of the same block may activate."""


class SnapshotFormatError(WeaveError):
    """A snapshot's JSON form is malformed (unknown phase, bad field); nothing is planned."""

    code = "snapshot_invalid"


@dataclass(frozen=True)
class Entered:
    """A composite's saved activation: the kind's decision and the blocks it entered."""

    decision: JSON
    blocks: tuple[str, ...]

    def to_json(self) -> dict[str, JSON]:
        return {"value": self.decision, "blocks": list(self.blocks)}


@dataclass(frozen=True)
class StepState:
    """The saved state of one activated step."""

    phase: Phase
    output: JSON = None
    """The saved output; meaningful only when ``phase`` is SUCCEEDED."""
    entered: Entered | None = None
    """Composites only: what their activation decided (``None`` for leaves)."""
    version: int = 1
    """The step's state version; the core carries it and never interprets it."""

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {"phase": self.phase.value, "version": self.version}
        if self.phase is Phase.SUCCEEDED:
            out["output"] = self.output
        if self.entered is not None:
            out["decision"] = self.entered.to_json()
        return out


def _bad(message: str, where: str) -> SnapshotFormatError:
    return SnapshotFormatError(f"snapshot {where}: {message}", details={"path": where})


def _state_from_json(value: Any, where: str) -> StepState:
    if not isinstance(value, Mapping):
        raise _bad("a step state is an object", where)
    unknown = set(value) - {"phase", "output", "decision", "version"}
    if unknown:
        raise _bad(f"unknown field(s) {sorted(unknown)}", where)
    try:
        phase = Phase(str(value.get("phase")))
    except ValueError:
        raise _bad(f"unknown phase {value.get('phase')!r}", where) from None
    version = value.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise _bad("version is a non-negative integer", where)
    if "output" in value and phase is not Phase.SUCCEEDED:
        raise _bad(f"only a SUCCEEDED step has an output, not a {phase.value} one", where)
    entered = None
    if "decision" in value:
        raw = value["decision"]
        if not isinstance(raw, Mapping) or set(raw) != {"value", "blocks"}:
            raise _bad("decision is {'value': ..., 'blocks': [...]}", where)
        blocks = raw["blocks"]
        if not isinstance(blocks, list) or not all(isinstance(b, str) for b in blocks):
            raise _bad("decision.blocks is a list of block names", where)
        entered = Entered(raw["value"], tuple(blocks))
    return StepState(phase, value.get("output"), entered, version)


@dataclass(frozen=True)
class Snapshot:
    """The instance input and the saved state of every activated step, by step id."""

    input: JSON
    steps: Mapping[str, StepState] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Read-only view over a private copy: the caller's dict may change, the snapshot not.
        object.__setattr__(self, "steps", MappingProxyType(dict(self.steps)))

    def to_json(self) -> dict[str, JSON]:
        return {
            "input": self.input,
            "steps": {step_id: state.to_json() for step_id, state in self.steps.items()},
        }

    @classmethod
    def from_json(cls, value: JSON) -> Snapshot:
        """Read the JSON form; raise ``SnapshotFormatError`` naming the bad field."""
        if not isinstance(value, Mapping) or set(value) - {"input", "steps"}:
            raise _bad("a snapshot is {'input': ..., 'steps': {...}}", "$")
        steps = value.get("steps", {})
        if not isinstance(steps, Mapping):
            raise _bad("steps is an object keyed by step id", "$.steps")
        return cls(
            value.get("input"),
            {sid: _state_from_json(raw, f"$.steps.{sid}") for sid, raw in steps.items()},
        )

    def with_state(self, step_id: str, state: StepState) -> Snapshot:
        """A copy with ``step_id`` set to ``state`` (for drivers and tests)."""
        steps = dict(self.steps)
        steps[step_id] = state
        return Snapshot(self.input, steps)


__all__ = [
    "PASSABLE",
    "ROOT",
    "Entered",
    "Phase",
    "Snapshot",
    "SnapshotFormatError",
    "StepState",
]
