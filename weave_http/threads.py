"""Blocking kernel calls run off the event loop: one thread pool, the caller's context kept.

Why not Starlette's ``run_in_threadpool`` on the hot path: anyio's worker-thread hand-off
(a capacity limiter, a cancel scope, a queue per thread) cost about 5% of the server's CPU
under the S2 benchmark, a third of what the ``complete`` route spends outside the step
transaction. ``loop.run_in_executor`` does the same hand-off with less. The context
(request ids for log lines, the trace span) is copied into the thread, as anyio does.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Final, TypeVar

T = TypeVar("T")

MAX_THREADS: Final = 40
"""As many blocking calls at once as anyio's default limiter allows."""

_pool = ThreadPoolExecutor(max_workers=MAX_THREADS, thread_name_prefix="weave-blocking")


async def in_thread(fn: Callable[[], T]) -> T:
    """Run ``fn`` in the pool and await its result; ``fn`` sees the caller's context."""
    call = functools.partial(contextvars.copy_context().run, fn)
    return await asyncio.get_running_loop().run_in_executor(_pool, call)


__all__ = ["MAX_THREADS", "in_thread"]
