"""Blocking calls off the event loop (``weave_http.threads``): the caller's context goes
with the call into the pool's thread, results and errors come back, the loop stays free."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from weave_http.threads import in_thread

_REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="none")


def test_the_call_sees_the_callers_context_in_another_thread() -> None:
    async def _main() -> tuple[str, bool]:
        _REQUEST.set("req-1")
        loop_thread = threading.get_ident()
        return await in_thread(lambda: (_REQUEST.get(),
                                        threading.get_ident() != loop_thread))

    assert asyncio.run(_main()) == ("req-1", True)


def test_an_error_in_the_call_reaches_the_caller() -> None:
    def _fail() -> None:
        raise LookupError("no such task")

    with pytest.raises(LookupError, match="no such task"):
        asyncio.run(in_thread(_fail))


def test_the_loop_serves_others_while_a_call_blocks() -> None:
    release = threading.Event()

    async def _main() -> list[str]:
        seen: list[str] = []
        blocked = asyncio.ensure_future(in_thread(lambda: release.wait(5)))
        await asyncio.sleep(0.01)
        seen.append("loop ran")  # the blocking call did not hold the loop
        release.set()
        assert await blocked is True
        seen.append("call done")
        return seen

    assert asyncio.run(_main()) == ["loop ran", "call done"]
