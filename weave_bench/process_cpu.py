"""CPU time of other processes on this machine: the engine the bench started, the database.

S1 is serial: each step waits for the one before it, so every millisecond the database
server or the engine spends on a step is on the step's path. Reading their CPU time beside
the latency shows which part of it an engine change can remove and which it cannot (the
database's own work for the rows a step writes). Read from ``/proc`` (Linux); a database
that runs on another machine, or a system without ``/proc``, gives no reading, never a
made-up one.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

_LOCAL_HOSTS = {"", "127.0.0.1", "localhost", "::1"}
_DATABASE_SERVERS = {"mariadbd", "mysqld"}
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` and all its threads, ended ones included."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # the name may hold spaces and parentheses
    return (int(fields[11]) + int(fields[12])) / _TICKS


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants now (``weave serve --workers N`` runs N children)."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                pending += [int(child) for child in (task / "children").read_text().split()]
            except OSError:
                continue  # the task ended while we looked
    return found


def database_server_pid(url: str) -> int | None:
    """The MariaDB/MySQL server's pid when ``url`` points at this machine and one runs here."""
    if (urlsplit(url).hostname or "") not in _LOCAL_HOSTS:
        return None
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if (entry / "comm").read_text().strip() in _DATABASE_SERVERS:
                found.append(int(entry.name))
        except OSError:
            continue  # ended while we looked
    return found[0] if len(found) == 1 else None


class CpuMeter:
    """CPU seconds spent by named processes, each with its descendants, between ``start()``
    and ``stop()``. A process (or child) that is not there at both readings is left out."""

    def __init__(self, pids: dict[str, int | None]) -> None:
        self._pids = {name: pid for name, pid in pids.items() if pid is not None}
        self._trees: dict[str, list[int]] = {}
        self._began: dict[str, float] = {}
        self.spent: dict[str, float] = {}

    def start(self) -> None:
        self._trees = {name: process_tree(pid) for name, pid in self._pids.items()}
        self._began = self._read()

    def stop(self) -> None:
        ended = self._read()
        self.spent = {name: ended[name] - self._began[name]
                      for name in ended if name in self._began}

    def _read(self) -> dict[str, float]:
        readings = {}
        for name, tree in self._trees.items():
            values = [process_cpu_seconds(pid) for pid in tree]
            if all(value is not None for value in values):
                readings[name] = sum(value or 0.0 for value in values)
        return readings


__all__ = ["CpuMeter", "database_server_pid", "process_cpu_seconds", "process_tree"]
