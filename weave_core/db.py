"""Re-exports :mod:`weave_core.storage.db` (and the error codes of
:mod:`weave_core.storage.retries`) at its stable public path.

docs/storage.md, migrations/env.py and ``weave_sdk.testing`` use it. Kept when the kernel
was grouped into folders (#16); code inside the kernel imports :mod:`weave_core.storage.db`
itself.
"""

from weave_core.storage.db import (
    DEFAULT_SQLITE_URL,
    SQLITE_BUSY_TIMEOUT_MS,
    TXN_STARTED,
    Database,
    Dialect,
    T,
    default_database_url,
    logger,
    savepoint,
    set_clock_offset,
)
from weave_core.storage.retries import (
    CR_SERVER_GONE_ERROR,
    CR_SERVER_LOST,
    ER_CHECKREAD,
    ER_LOCK_DEADLOCK,
    ER_LOCK_WAIT_TIMEOUT,
    ER_SP_DOES_NOT_EXIST,
    mysql_error_code,
    reruns_transaction,
)

__all__ = [
    "CR_SERVER_GONE_ERROR",
    "CR_SERVER_LOST",
    "DEFAULT_SQLITE_URL",
    "ER_CHECKREAD",
    "ER_LOCK_DEADLOCK",
    "ER_LOCK_WAIT_TIMEOUT",
    "ER_SP_DOES_NOT_EXIST",
    "SQLITE_BUSY_TIMEOUT_MS",
    "TXN_STARTED",
    "Database",
    "Dialect",
    "T",
    "default_database_url",
    "logger",
    "mysql_error_code",
    "reruns_transaction",
    "savepoint",
    "set_clock_offset",
]
