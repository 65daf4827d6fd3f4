"""Notices a transaction leaves for after its commit: in-process wake-ups.

A transaction that makes a task claimable (``dispatch.wakeup``) or an instance done
(``runtime.outcomes``) wakes this process's waiters — but only once it has committed, never
before, and not at all when it rolls back. :func:`note` collects the keys on the
connection; one ``commit``/``rollback`` listener per engine hands them to the callback that
:func:`subscribe` registered for their channel. Nothing is collected for a channel nobody
subscribed to in this process.
"""

from __future__ import annotations

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


def subscribe(engine: Engine, channel: str, notify: Notify) -> None:
    """Call ``notify(keys)`` after each commit on ``engine`` that noted keys of ``channel``
    (one subscriber per channel and engine; a second replaces the first)."""
    with _lock:
        channels = _channels.get(engine)
        if channels is None:
            channels = _channels[engine] = {}
            event.listen(engine, "commit", _on_commit)
            event.listen(engine, "rollback", _on_rollback)
        channels[channel] = notify


def note(conn: Connection, channel: str, key: Hashable) -> None:
    """Inside a transaction: hand ``key`` to ``channel``'s subscriber once it commits."""
    channels = _channels.get(conn.engine)
    if channels is not None and channel in channels:
        pending: dict[str, set[Hashable]] = conn.info.setdefault(_KEY, {})
        pending.setdefault(channel, set()).add(key)


def _on_commit(conn: Connection) -> None:
    pending: dict[str, set[Hashable]] | None = conn.info.pop(_KEY, None)
    if pending:
        channels = _channels.get(conn.engine, {})
        for channel, keys in pending.items():
            notify = channels.get(channel)
            if notify is not None:
                notify(keys)


def _on_rollback(conn: Connection) -> None:
    conn.info.pop(_KEY, None)


__all__ = ["note", "subscribe"]
