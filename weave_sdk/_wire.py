"""A kept-alive HTTP/1.1 connection for the worker's hot loop.

A worker makes one request per task (``complete`` with ``claim_next``). Through httpx and
asyncio that request cost about a millisecond of CPU; written straight to a socket with the
fixed headers prepared once, and the answer read with ``Content-Length``, it costs a
small fraction of that. One connection belongs to one thread (no locks). A connection the
server closed while idle is replaced before the next request is written.
"""

from __future__ import annotations

import io
import socket
import ssl
import time
from typing import Final
from urllib.parse import urlsplit

import httpx

from weave_sdk.errors import WeaveAPIError, WeaveConnectionError

IDLE_REOPEN_S: Final = 4.0
"""A connection idle this long is reopened first: uvicorn drops idle ones after 5 s."""


class WireError(WeaveConnectionError):
    """The request could not be sent or its answer could not be read."""


class Connection:
    """One persistent connection to the server, used by one thread at a time.

    :param base_url: ``http://host:port`` (or ``https://``).
    :param headers: sent with every request (authorization, user agent, accept).
    """

    def __init__(self, base_url: str, headers: dict[str, str]) -> None:
        parts = urlsplit(base_url)
        self._tls = parts.scheme == "https"
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or (443 if self._tls else 80)
        self._prefix = parts.path.rstrip("/")
        self.base_url = base_url
        host = parts.netloc
        fixed = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self._head = f"Host: {host}\r\n{fixed}content-type: application/json\r\n"
        self._sock: socket.socket | None = None
        self._file: io.BufferedReader | None = None
        self._used = 0.0
        self._aborted = False

    def close(self) -> None:
        sock, self._sock, self._file = self._sock, None, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def abort(self) -> None:
        """Interrupt a request in flight from another thread (its read fails, no retry)."""
        self._aborted = True
        sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _open(self, timeout: float) -> socket.socket:
        sock = socket.create_connection((self._host, self._port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._tls:
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self._host)
        self._sock = sock
        self._file = sock.makefile("rb")
        return sock

    def post(self, path: str, body: bytes, *, timeout: float) -> tuple[int, bytes]:
        """POST ``body`` (JSON) to ``path``; the status and the body of the answer.

        :raises WireError: the connection failed (nothing is known about the request).
        """
        stale = self._sock is not None and time.monotonic() - self._used > IDLE_REOPEN_S
        if stale:
            self.close()
        request = (f"POST {self._prefix}{path} HTTP/1.1\r\n{self._head}"
                   f"content-length: {len(body)}\r\n\r\n").encode("latin-1") + body
        reused = self._sock is not None
        try:
            return self._exchange(request, timeout)
        except (OSError, _Closed) as exc:
            self.close()
            if reused and isinstance(exc, _Closed) and exc.before_answer and not self._aborted:
                # Closed by the server between two requests: it never read this one.
                try:
                    return self._exchange(request, timeout)
                except (OSError, _Closed) as again:
                    self.close()
                    raise WireError(f"POST {self.base_url}{path} failed: {again}") from again
            raise WireError(f"POST {self.base_url}{path} failed: {exc!r}") from exc

    def _exchange(self, request: bytes, timeout: float) -> tuple[int, bytes]:
        sock = self._sock if self._sock is not None else self._open(timeout)
        sock.settimeout(timeout)
        sock.sendall(request)
        f = self._file
        assert f is not None
        status_line = f.readline(65537)
        if not status_line:
            raise _Closed(before_answer=True)
        try:
            status = int(status_line.split(b" ", 2)[1])
        except (IndexError, ValueError):
            raise _Closed(before_answer=False) from None
        length = -1
        chunked = close = False
        while True:
            line = f.readline(65537)
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif name == b"connection":
                close = b"close" in value.lower()
        if chunked:
            data = self._chunks()
        elif length >= 0:
            data = f.read(length)
            if len(data) != length:
                raise _Closed(before_answer=False)
        else:
            data = f.read()
            close = True
        if close:
            self.close()
        self._used = time.monotonic()
        return status, data

    def _chunks(self) -> bytes:
        f = self._file
        assert f is not None
        parts: list[bytes] = []
        while True:
            size = int(f.readline(65537).split(b";")[0], 16)
            if size == 0:
                while f.readline(65537) not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            parts.append(f.read(size))
            f.readline(65537)


class _Closed(Exception):
    def __init__(self, *, before_answer: bool) -> None:
        super().__init__("the server closed the connection")
        self.before_answer = before_answer


def error_of(status: int, body: bytes, url: str) -> WeaveAPIError:
    """The SDK's typed error for an error answer (the same mapping as the clients)."""
    from weave_sdk._answers import api_error

    response = httpx.Response(status, content=body, request=httpx.Request("POST", url))
    return api_error(response)


__all__ = ["Connection", "WireError", "error_of"]
