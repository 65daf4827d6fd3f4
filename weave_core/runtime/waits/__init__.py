"""What ends a durable wait (issue 6): signals, timers and poll rounds, their races, and the
step they settle, above the advance they call into.

A wait is opened below the advance (:mod:`weave_core.runtime.wait_opening`, on the records
of :mod:`weave_core.runtime.wait_records`); the rest of the kernel calls in here at these
points:

- :func:`wait_pending_txn` (``due``) — from the pending-advance runner for ``TIMER``,
  ``POLL`` and ``SIGNAL`` rows;
- :func:`apply_round_result_txn` (``polls``) — from the consumer for a poll activation's
  result;
- :func:`accept_signal` (``signals``) and :func:`expire_signals` (``signal_expiry``) —
  the API and the tick;
- :func:`cancel_waits_txn` (``runtime.wait_cancel``) and :func:`resume_waits_txn` (``races``) —
  stopping, pausing;
- :func:`describe_waits` (``views``) — the instance view (waits, signals, poll rounds);
- :func:`start_problems` (``declared``) — admission (R-7.7).

Inside, the modules point one way: ``due`` and ``views`` → ``signals`` → ``timers`` →
``polls`` → ``signal_waits`` → ``settling`` → the advance; ``signal_expiry`` and
``races`` stand beside them. See docs/waits.md for the rules, races and limits.
"""

from weave_core.runtime.wait_cancel import cancel_waits_txn
from weave_core.runtime.wait_opening import WAIT_COMMANDS, open_wait_txn
from weave_core.runtime.waits.declared import start_problems
from weave_core.runtime.waits.due import wait_pending_txn
from weave_core.runtime.waits.polls import apply_round_result_txn
from weave_core.runtime.waits.races import resume_waits_txn
from weave_core.runtime.waits.signal_expiry import expire_signals
from weave_core.runtime.waits.signals import (
    Acceptance,
    SignalRequest,
    accept_signal,
)
from weave_core.runtime.waits.views import describe_waits

__all__ = [
    "WAIT_COMMANDS",
    "Acceptance",
    "SignalRequest",
    "accept_signal",
    "apply_round_result_txn",
    "cancel_waits_txn",
    "describe_waits",
    "expire_signals",
    "open_wait_txn",
    "resume_waits_txn",
    "start_problems",
    "wait_pending_txn",
]
