"""Random hex for ids, read from the operating system 4 KiB at a time.

Why: ``secrets.token_hex`` makes one ``getrandom`` system call per id, and a step makes
about six ids. Each call releases the GIL, and under load the thread then waits for
another request's thread to give the GIL back. One call per 4 KiB (about 500 ids) keeps
the same source, ``os.urandom``, without that. A forked child starts with an empty pool,
so parent and child never share bytes.
"""

from __future__ import annotations

import os
import threading

_POOL_BYTES = 4096
_lock = threading.Lock()
_pool = b""
_at = 0


def random_hex(nbytes: int) -> str:
    """``nbytes`` bytes from ``os.urandom``, as ``2 * nbytes`` hex digits."""
    global _pool, _at
    with _lock:
        if _at + nbytes > len(_pool):
            _pool = os.urandom(max(_POOL_BYTES, nbytes))
            _at = 0
        chunk = _pool[_at:_at + nbytes]
        _at += nbytes
    return chunk.hex()


def _forget() -> None:
    global _pool, _at
    _pool, _at = b"", 0


os.register_at_fork(after_in_child=_forget)

__all__ = ["random_hex"]
