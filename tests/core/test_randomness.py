"""Ids' random part (``weave_core.foundation.randomness``): OS randomness handed out in
pieces, never the same piece twice, and never shared by a forked child with its parent."""

from __future__ import annotations

import os
import threading

from weave_core.dispatch.model import new_id
from weave_core.foundation.randomness import random_hex


def test_pieces_are_hex_of_the_asked_length_and_never_repeat() -> None:
    pieces = [random_hex(8) for _ in range(5_000)]  # about ten refills of the pool
    assert all(len(p) == 16 and int(p, 16) >= 0 for p in pieces)
    assert len(set(pieces)) == len(pieces)
    assert len(random_hex(5_000)) == 10_000  # more than a pool at once


def test_threads_never_get_the_same_piece() -> None:
    seen: list[str] = []

    def take() -> None:
        seen.extend(new_id("t") for _ in range(2_000))

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 8_000 and len(set(seen)) == 8_000


def test_a_forked_child_does_not_reuse_the_parents_pool() -> None:
    random_hex(8)  # the parent's pool holds bytes not yet handed out
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: write its next piece and leave at once
        os.write(write, random_hex(8).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    os.close(read)
    assert len(child) == 16 and child != random_hex(8)
