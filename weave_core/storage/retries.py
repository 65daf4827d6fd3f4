"""Which database errors re-run a transaction, and how long to wait before the next try:
the MariaDB/MySQL codes ``Database.transaction`` acts on (deadlock, a lost connection,
a lock wait time-out) and the jittered back-off between attempts."""

from __future__ import annotations

import random
import sqlite3
from typing import Final

from sqlalchemy.exc import DBAPIError

# MariaDB/MySQL error codes the helper acts on (see the module docstring).
ER_LOCK_DEADLOCK: Final = 1213
ER_CHECKREAD: Final = 1020  # "Record has changed since last read" (MariaDB >= 11.6, RR)
ER_LOCK_WAIT_TIMEOUT: Final = 1205
CR_SERVER_GONE_ERROR: Final = 2006
CR_SERVER_LOST: Final = 2013
ER_SP_DOES_NOT_EXIST: Final = 1305  # SAVEPOINT ... does not exist (after a deadlock)

_RERUN_CODES: Final = frozenset({ER_LOCK_DEADLOCK, ER_CHECKREAD})
LOST_CONNECTION_CODES: Final = frozenset({CR_SERVER_GONE_ERROR, CR_SERVER_LOST})


def mysql_error_code(exc: BaseException) -> int | None:
    """The MySQL error number carried by a (wrapped) PyMySQL error, if any."""
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    args = getattr(orig, "args", ())
    if args and isinstance(args[0], int):
        return args[0]
    return None


def retry_reason(exc: BaseException) -> str | None:
    """Why ``exc`` calls for re-running the whole transaction, or None when it does not."""
    if not isinstance(exc, DBAPIError):
        return None
    if isinstance(exc.orig, sqlite3.OperationalError):
        text = str(exc.orig).lower()
        if "database is locked" in text or "database table is locked" in text:
            return "sqlite_busy"
        return None
    code = mysql_error_code(exc)
    if code in _RERUN_CODES:
        return f"deadlock_{code}"
    if code == ER_LOCK_WAIT_TIMEOUT:
        return "lock_wait_timeout_1205"
    if code in LOST_CONNECTION_CODES or exc.connection_invalidated:
        return f"lost_connection_{code}"
    return None


def reruns_transaction(exc: BaseException) -> bool:
    """Does ``exc`` end the whole transaction, so that it must be re-run (never carried on
    past, e.g. after rolling back to a savepoint)?"""
    return retry_reason(exc) is not None


_BACKOFF_BASE_S: Final = 0.005
_BACKOFF_CAP_S: Final = 0.25


def backoff(attempt: int) -> float:
    """Jittered exponential delay before attempt ``attempt + 1`` (seconds)."""
    ceiling: float = min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2 ** (attempt - 1))
    return random.uniform(ceiling / 2, ceiling)  # jitter, not security
