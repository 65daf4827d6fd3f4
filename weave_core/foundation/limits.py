"""Every capacity limit of the engine, with its default, in one place (R-11.1).

A limit that is hit produces a clear error with a stable code; nothing accepted is lost.
Deployments override defaults with ``WEAVE_LIMIT_<NAME>`` environment variables.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace


@dataclass(frozen=True)
class Limits:
    """Engine limits. Field names are the stable limit names used in errors and docs."""

    max_body_bytes: int = 2 * 1024 * 1024
    """Largest HTTP request body, refused before it is buffered."""
    max_json_depth: int = 64
    """Deepest JSON nesting accepted anywhere."""
    max_definition_bytes: int = 1024 * 1024
    """Largest canonical definition document."""
    max_steps: int = 500
    """Steps per definition, counting steps inside composites."""
    max_nesting: int = 8
    """Composite nesting depth (a top-level step is at depth 1)."""
    max_parallel_width: int = 32
    """Branches of one ``parallel`` step."""
    max_branch_cases: int = 32
    """Cases of one ``branch`` step."""
    max_poll_rounds: int = 1000
    """``max_rounds`` of one ``poll`` step."""
    max_poll_attempts_total: int = 10_000
    """``max_rounds`` times ``attempts_per_round`` of one ``poll`` step."""
    max_task_attempts: int = 100
    """Attempt budget of one task."""
    max_value_bytes: int = 256 * 1024
    """Largest input template, task input, output or signal payload."""
    max_snapshot_bytes: int = 512 * 1024
    """Largest frozen result snapshot in the inbox (R-5.3)."""
    max_deadline_seconds: int = 366 * 24 * 3600
    """Longest instance, wait or poll deadline."""
    max_plan_changes: int = 32
    """Structural changes per advance (R-6.4)."""
    max_id_length: int = 128
    """Longest identifier (definition ids, versions, step ids, queue names)."""
    max_unmatched_signals: int = 1000
    """Accepted, not yet consumed signals one instance may hold (R-7.3)."""
    signal_retention_seconds: int = 30 * 24 * 3600
    """How long an accepted signal that no wait consumed is kept before it expires."""

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Limits:
        """Defaults overridden by ``WEAVE_LIMIT_<NAME>`` variables (positive integers)."""
        env = os.environ if environ is None else environ
        overrides: dict[str, int] = {}
        for f in fields(cls):
            raw = env.get(f"WEAVE_LIMIT_{f.name.upper()}")
            if raw is None:
                continue
            value = int(raw)
            if value <= 0:
                raise ValueError(f"WEAVE_LIMIT_{f.name.upper()} must be a positive integer")
            overrides[f.name] = value
        return replace(cls(), **overrides)

    def get(self, name: str) -> int:
        """The limit called ``name``; a ``KeyError`` names an unknown limit."""
        if name not in {f.name for f in fields(self)}:
            raise KeyError(f"unknown limit {name!r}")
        value = getattr(self, name)
        assert isinstance(value, int)
        return value


DEFAULT_LIMITS = Limits()

__all__ = ["DEFAULT_LIMITS", "Limits"]
