"""Notices a transaction leaves for after its commit: in-process wake-ups.

A transaction that makes a task claimable (``dispatch.wakeup``) or an instance done
(``runtime.outcomes``) wakes this process's waiters — but only once it has committed, never
before, and not at all when it rolls back. :func:`note` collects the keys on the
connection; once ``Database.transaction`` saw the COMMIT succeed (:func:`run_later`) they
go to the callback that :func:`subscribe` registered for their channel. Not at
SQLAlchemy's ``commit`` event: that fires before the ``COMMIT`` is sent (and on MariaDB the
transaction's last writes travel with it), so a woken claimer could look for a task before
it exists, miss it and sleep until its next poll. Nothing is collected for a channel nobody
subscribed to in this process.

:func:`later` is the exact form for counters and log lines (``weave_core.observability.observe``): a
callable noted in a transaction runs once ``Database.transaction`` saw its COMMIT succeed
(never when it or the savepoint it was noted in rolls back, never twice on a re-run).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any, Final

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

Notify = Callable[[set[Any]], None]

_KEY: Final = "weave_after_commit"
_channels: weakref.WeakKeyDictionary[Engine, dict[str, Notify]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
logger = logging.getLogger(__name__)


def subscribe(engine: Engine, channel: str, notify: Notify) -> None:
    """Call ``notify(keys)`` after each commit on ``engine`` that noted keys of ``channel``
    (one subscriber per channel and engine; a second replaces the first)."""
    with _lock:
        channels = _channels.get(engine)
        if channels is None:
            channels = _channels[engine] = {}
            event.listen(engine, "rollback", _on_rollback)
        channels[channel] = notify


def note(conn: Connection, channel: str, key: Hashable) -> None:
    """Inside a transaction: hand ``key`` to ``channel``'s subscriber once it commits."""
    channels = _channels.get(conn.engine)
    notify = None if channels is None else channels.get(channel)
    if notify is not None:
        pending: dict[str, tuple[Notify, set[Hashable]]] = conn.info.setdefault(_KEY, {})
        pending.setdefault(channel, (notify, set()))[1].add(key)


_LATER: Final = "weave_later"


def later(conn: Connection, fn: Callable[[], None]) -> None:
    """Inside a transaction: call ``fn()`` once it has committed (see the module docstring)."""
    pending: list[Callable[[], None]] | None = conn.info.get(_LATER)
    if pending is None:
        conn.info[_LATER] = [fn]
    else:
        pending.append(fn)


def later_mark(conn: Connection) -> int:
    """A point to roll the :func:`later` callables back to (at a SAVEPOINT)."""
    return len(conn.info.get(_LATER, ()))


def later_rollback(conn: Connection, mark: int) -> None:
    """Forget the callables noted after ``mark`` (their savepoint rolled back)."""
    pending: list[Callable[[], None]] | None = conn.info.get(_LATER)
    if pending is not None:
        del pending[mark:]


def run_later(info: dict[Any, Any], committed: bool) -> None:
    """The transaction on the connection whose ``conn.info`` is ``info`` ended (taken
    before it ended: an invalidated connection has none to read): run its callables and
    hand its noted keys to their subscribers if it ``committed``, else drop them. A
    failing callable is logged, never undoes the commit."""
    pending: list[Callable[[], None]] | None = info.pop(_LATER, None)
    if pending and committed:
        for fn in pending:
            try:
                fn()
            except Exception:
                logger.exception("after-commit callable failed")
    noted: dict[str, tuple[Notify, set[Hashable]]] | None = info.pop(_KEY, None)
    if noted and committed:
        for notify, keys in noted.values():
            try:
                notify(keys)
            except Exception:
                logger.exception("after-commit wake-up failed")


def _on_rollback(conn: Connection) -> None:
    if not conn.invalidated:  # an invalidated one's notes go with run_later(committed=False)
        conn.info.pop(_KEY, None)


__all__ = ["later", "later_mark", "later_rollback", "note", "run_later", "subscribe"]
