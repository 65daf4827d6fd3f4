"""Named fault points: places where a test can make the engine fail on purpose.

Production code calls :func:`fault_point` at labelled steps of a transaction (for example
``"delivery.after_event"``); it does nothing unless a test armed that name. A test arms a
point with :func:`armed` and checks that the failure left no partial state. The database
is never mocked: the fault is a real exception raised inside a real transaction.

Fault points are process-wide (a test arms them in the process that runs the code).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from weave_core.errors import WeaveError


class InjectedFaultError(WeaveError):
    """Raised by an armed fault point."""

    code = "injected_fault"


_lock = threading.Lock()
_armed: dict[str, int] = {}  # name -> how many more hits raise (-1: every hit)


def fault_point(name: str) -> None:
    """Raise :class:`InjectedFaultError` if a test armed ``name``; otherwise do nothing."""
    if not _armed:  # the production path: one dict truth test
        return
    with _lock:
        remaining = _armed.get(name)
        if remaining is None or remaining == 0:
            return
        if remaining > 0:
            _armed[name] = remaining - 1
    raise InjectedFaultError(f"fault injected at {name}", details={"fault_point": name})


@contextmanager
def armed(name: str, times: int = -1) -> Iterator[None]:
    """Arm ``name`` inside the block: the next ``times`` hits raise (-1: every hit)."""
    with _lock:
        _armed[name] = times
    try:
        yield
    finally:
        with _lock:
            _armed.pop(name, None)


__all__ = ["InjectedFaultError", "armed", "fault_point"]
