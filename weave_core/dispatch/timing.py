"""Dispatch time arithmetic on database time: leases, start-by, backoff (pure functions)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Row

from weave_core.dispatch.model import DEFAULT_LEASE_SECONDS


def earliest(*values: datetime | None) -> datetime | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None


def lease_seconds(task: Row[Any]) -> int:
    """How long one lease lasts: the heartbeat timeout, else start-to-close, else default."""
    if task.heartbeat_timeout_s:
        return int(task.heartbeat_timeout_s)
    if task.start_to_close_s:
        return int(task.start_to_close_s)
    return DEFAULT_LEASE_SECONDS


def lease_until(
    now: datetime, seconds: int, close_by: datetime | None, deadline_at: datetime | None
) -> datetime:
    """A lease renewed at ``now``: never past the attempt's close-by nor the deadline."""
    until = earliest(now + timedelta(seconds=seconds), close_by, deadline_at)
    assert until is not None
    return until


def pending_start_by(task: Row[Any], available_at: datetime) -> datetime | None:
    """Schedule-to-start limit of a pending period that begins at ``available_at``."""
    if task.schedule_to_start_s is None:
        return None
    return available_at + timedelta(seconds=int(task.schedule_to_start_s))


def backoff_delay(task: Row[Any], attempt_no: int) -> timedelta:
    """Delay before the retry that follows attempt ``attempt_no`` (1-based), capped."""
    ms = int(task.backoff_ms) * (int(task.backoff_multiplier_milli) / 1000) ** (attempt_no - 1)
    ms = min(ms, int(task.max_backoff_ms))
    return timedelta(milliseconds=max(0, int(ms)))


__all__ = ["backoff_delay", "earliest", "lease_seconds", "lease_until", "pending_start_by"]
