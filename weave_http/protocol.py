"""uvicorn's httptools protocol with read time-outs: a slow client cannot hold a connection.

uvicorn closes a kept-alive connection that stays idle (``timeout_keep_alive``) but has no
limit on how long a client may take to send a request: a client that sends half a header
and stops would hold its connection (and a slot of ``limit_concurrency``) for ever.
:class:`GuardedHttpToolsProtocol` arms one timer per connection: from the connection (or
the first byte of a request) until its headers are complete, ``header_timeout`` seconds;
from then until its body is complete, ``body_timeout`` seconds. A timer that fires closes
the connection; a request whose body was cut off is answered by nothing (its handler sees
the disconnect, ``weave_http.body``), also when it was answered before its body was read
(a 401). Between two requests uvicorn's keep-alive time-out applies. Requests other
clients send are never delayed: every connection is its own protocol object on the loop.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Final

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

DEFAULT_HEADER_TIMEOUT_S: Final = 10.0
DEFAULT_BODY_TIMEOUT_S: Final = 30.0
HEADER_TIMEOUT_ATTR: Final = "weave_header_timeout"
BODY_TIMEOUT_ATTR: Final = "weave_body_timeout"
"""Attributes of the uvicorn ``Config`` the protocol reads its time-outs from (the config
travels to ``--workers`` processes whole)."""

logger = logging.getLogger(__name__)


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol plus the header and body read time-outs (module docstring)."""

    def __init__(self, config: Any, server_state: Any, app_state: Any,
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._header_timeout = float(getattr(config, HEADER_TIMEOUT_ATTR,
                                             DEFAULT_HEADER_TIMEOUT_S))
        self._body_timeout = float(getattr(config, BODY_TIMEOUT_ATTR, DEFAULT_BODY_TIMEOUT_S))
        self._guard: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm(self._header_timeout, "headers")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm(self._header_timeout, "headers")

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._arm(self._body_timeout, "body")

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._disarm()

    def _arm(self, seconds: float, what: str) -> None:
        self._disarm()
        self._guard = self.loop.call_later(seconds, self._expired, what)

    def _disarm(self) -> None:
        if self._guard is not None:
            self._guard.cancel()
            self._guard = None

    def _expired(self, what: str) -> None:
        self._guard = None
        if not self.transport.is_closing():
            logger.info("closing a connection from %s: its request %s took too long",
                        _peer(self.client), what)
            self.transport.close()


def _peer(client: Any) -> str:
    return "unknown" if not client else f"{client[0]}:{client[1]}"


__all__ = [
    "BODY_TIMEOUT_ATTR", "DEFAULT_BODY_TIMEOUT_S", "DEFAULT_HEADER_TIMEOUT_S",
    "HEADER_TIMEOUT_ATTR", "GuardedHttpToolsProtocol",
]
