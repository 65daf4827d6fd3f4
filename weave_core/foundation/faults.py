"""Named fault points: places where a test can make the engine fail on purpose.

Production code calls :func:`fault_point` at labelled steps of a transaction (for example
``"delivery.after_event"``); it does nothing unless a test armed that name. A test arms a
point with :func:`armed` and checks that the failure left no partial state. The database
is never mocked: the fault is a real exception raised inside a real transaction.

A real process (``weave serve``) arms points from the environment instead:
``WEAVE_FAULT_KILL="step.before_commit@3,claim.after_commit"`` makes the process SIGKILL
itself at the third hit of ``step.before_commit`` (the first when ``@N`` is left out) —
kill -9 at a labelled instant, no rollback, no clean shutdown (the T5 tests).

Fault points are process-wide. Unarmed, a fault point costs one dict truth test.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Final

from weave_core.foundation.errors import WeaveError

KILL_ENV: Final = "WEAVE_FAULT_KILL"
"""The environment variable naming the points at which a process kills itself."""

POINTS: Final = (
    "claim.after_commit", "advance.in_savepoint", "step.before_commit", "step.after_commit",
    "tick.batch.mid", "signal.accept.mid", "control.mid",
)
"""The labelled kill points of T5 (any fault point name may be armed)."""


class InjectedFaultError(WeaveError):
    """Raised by an armed fault point."""

    code = "injected_fault"


_KILL: Final = -2  # in _armed: the point kills the process when its hit count runs out
_lock = threading.Lock()
_armed: dict[str, int] = {}  # name -> how many more hits raise (-1: every hit; _KILL)
_kill_at: dict[str, int] = {}  # name -> hits left before the kill


def fault_point(name: str) -> None:
    """Raise :class:`InjectedFaultError` if a test armed ``name``; otherwise do nothing."""
    if not _armed:  # the production path: one dict truth test
        return
    with _lock:
        remaining = _armed.get(name)
        if remaining is None or remaining == 0:
            return
        if remaining == _KILL:
            _kill_at[name] -= 1
            if _kill_at[name] > 0:
                return
            sys.stderr.write(f"weave: killed at fault point {name} (pid {os.getpid()})\n")
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        if remaining > 0:
            _armed[name] = remaining - 1
    raise InjectedFaultError(f"fault injected at {name}", details={"fault_point": name})


def arm_kills(environ: Mapping[str, str]) -> list[str]:
    """Arm the kill points ``environ[KILL_ENV]`` names (``name[@N]``, comma separated)."""
    names = []
    for item in environ.get(KILL_ENV, "").split(","):
        name, _, nth = item.strip().partition("@")
        if name:
            with _lock:
                _armed[name], _kill_at[name] = _KILL, max(1, int(nth or 1))
            names.append(name)
    return names


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


arm_kills(os.environ)

__all__ = ["KILL_ENV", "POINTS", "InjectedFaultError", "arm_kills", "armed", "fault_point"]
