"""A long poll ends when its client leaves: a worker that stops cuts its claim poll, and a
poll that went on waiting could claim a task for a worker that is gone (its lease would
have to expire before anyone else ran it)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any, TypeVar

from starlette.requests import Request

T = TypeVar("T")


async def _disconnected(request: Request) -> None:
    """Returns when the client has gone (the body is already read: nothing else comes)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def unless_disconnected(request: Request, work: Coroutine[Any, Any, T],
                              gone: T) -> T:
    """``work``'s result, or ``gone`` once the client disconnected first (``work`` is
    cancelled: a wait is dropped; a claim transaction already running in its thread
    still commits, so a task it claimed at that instant waits for its lease to expire)."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait((task, watcher), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return gone


__all__ = ["unless_disconnected"]
