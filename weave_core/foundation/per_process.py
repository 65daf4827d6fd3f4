"""What one engine process keeps per database, and the waiters its long polls wake.

:class:`PerEngine` is the registry behind the process-wide objects that belong to one
database (the reports waiting per instance, the routes of the tasks handed out): made on
first use, dropped with the SQLAlchemy engine they belong to. :class:`LoopWaiter` is one
waiting request of an event loop that another thread wakes (a claim's or a result's long
poll, woken after a commit).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class PerEngine(Generic[T]):
    """One ``make()`` per key (a SQLAlchemy engine), thread-safe, weakly held."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._items: weakref.WeakKeyDictionary[Any, T] = weakref.WeakKeyDictionary()

    def of(self, key: Any) -> T:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                item = self._items[key] = self._make()
            return item


class LoopWaiter:
    """A request waiting on its event loop; :meth:`wake` may be called from any thread."""

    __slots__ = ("event", "loop")

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.event = asyncio.Event()

    def wake(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self.event.set)
        except RuntimeError:  # the loop closed: nobody waits any more
            pass


__all__ = ["LoopWaiter", "PerEngine"]
