"""Graceful shutdown: long polls end at once, in-flight transactions finish.

uvicorn stops on SIGTERM/SIGINT by closing its listening sockets and waiting for the
requests in flight (at most ``--graceful-timeout`` seconds, then it cancels them); only
then does the application hear of it (lifespan shutdown). A claim or result long poll
could hold it up to a minute, so :func:`on_stop_signal` chains this process's signal
handlers: the first SIGTERM/SIGINT also drains the engine's hubs (``drain``), and every
waiting claim answers ``tasks: []`` and every result wait the outcome as it is now,
while requests that run a transaction go on to their commit.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from weave_core.dispatch.wakeup import hub_for
from weave_core.engine import Engine
from weave_core.runtime.outcomes import outcome_hub


def drain(engine: Engine) -> None:
    """End this process's long polls on ``engine`` now and answer new ones at once."""
    hub_for(engine.db).drain()
    outcome_hub(engine.db).drain()


def on_stop_signal(engine: Engine) -> Callable[[], None]:
    """Drain ``engine`` when SIGTERM or SIGINT arrives, then run the handler that was
    installed (uvicorn's); returns the function that puts the previous handlers back.
    Does nothing off the main thread (signals are delivered to it only)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    loop = asyncio.get_running_loop()
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(drain, engine)  # never take a lock in a signal handler
        before = previous.get(signum)
        if callable(before):
            before(signum, frame)

    for sig in (signal.SIGTERM, signal.SIGINT):
        previous[sig] = signal.getsignal(sig)
        signal.signal(sig, handler)

    def restore() -> None:
        for sig, before in previous.items():
            if signal.getsignal(sig) is handler:
                signal.signal(sig, before)

    return restore


__all__ = ["drain", "on_stop_signal"]
