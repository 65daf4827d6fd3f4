"""The waits' locking reads live in :mod:`weave_core.storage.locks` (the one module that issues
locking reads); re-exported here for the waits package."""

from weave_core.storage.locks import (
    lock_bound_signals,
    lock_matching_signal,
    lock_open_waits,
    lock_poll_round,
    lock_signal,
    lock_wait,
)

__all__ = [
    "lock_bound_signals",
    "lock_matching_signal",
    "lock_open_waits",
    "lock_poll_round",
    "lock_signal",
    "lock_wait",
]
