"""Reports of one instance that arrive together are taken in one transaction (fan-in).

Why: every step transaction of an instance holds the instance row's lock from its first
read to its COMMIT, so the results of a fan-out's branches, reported at the same moment,
would otherwise run one after another — ten branches, ten step transactions in a row.
Instead, in each engine process, the reports of one instance form a *lane*: the first
report runs its step as usual; reports that arrive meanwhile wait in the process, not on
the row lock, and when it is done the first of them takes them all in one transaction
(``step_batch``), then hands the lane to whoever arrived in the meantime. A batch that
cannot run as one transaction runs its reports one by one, each with its own outcome; what
one report answers never depends on the others' (each is settled, consumed and answered as
if alone). Reports reaching other engine processes meet at the row lock, as before. A
waiting report holds its request's thread (``weave_http.threads``) for the few
milliseconds until its batch is done; a batch takes at most :data:`MAX_BATCH` reports, the
rest wait for the next one.
"""

from __future__ import annotations

import threading
from typing import Any, Final

from weave_core.engine import Engine
from weave_core.foundation.per_process import PerEngine
from weave_core.runtime.step_settle import Reported, StepDone

MAX_BATCH: Final = 32
"""The most reports one batch takes (its locking read: at most 4 + 2 * 32 parts)."""


class Queued(Exception):
    """The instance's lane is busy: this report waits for the next batch."""


class Turn:
    """One report on its way through a lane."""

    __slots__ = ("batch", "done", "error", "held", "peek", "ready", "reported")

    def __init__(self, reported: Reported) -> None:
        self.reported = reported
        self.peek: Any = None
        """The task's route (instance, owning activation), known once it queued."""
        self.held: str | None = None
        """The instance whose lane this report's thread leads."""
        self.batch: list[Turn] | None = None
        """Set when this report leads the next batch (itself first)."""
        self.done: StepDone | None = None
        self.error: BaseException | None = None
        self.ready = threading.Event()

    def answer(self) -> StepDone:
        if self.error is not None:
            raise self.error
        assert self.done is not None
        return self.done


class _Lane:
    __slots__ = ("members", "waiting")

    def __init__(self, members: list[Turn]) -> None:
        self.members = members
        self.waiting: list[Turn] = []


class Lanes:
    """The busy lanes of one engine process, by instance id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy: dict[str, _Lane] = {}

    def enter(self, instance_id: str, turn: Turn, peek: Any) -> None:
        """Go on (the lane was free, or ``turn`` is in the batch that holds it) or raise
        :class:`Queued` (``turn`` waits for the next batch)."""
        with self._lock:
            lane = self._busy.get(instance_id)
            if lane is None:
                self._busy[instance_id] = _Lane([turn])
                turn.held = instance_id
                return
            if any(member is turn for member in lane.members):
                return
            turn.peek = peek
            lane.waiting.append(turn)
        raise Queued

    def waiting(self, instance_id: str) -> int:
        """How many reports wait in the instance's lane."""
        with self._lock:
            lane = self._busy.get(instance_id)
            return 0 if lane is None else len(lane.waiting)

    def leave(self, instance_id: str) -> None:
        """The lane's batch is done: the reports that waited become the next batch, led by
        the first of them, or the lane is free."""
        with self._lock:
            lane = self._busy.get(instance_id)
            if lane is None:
                return
            batch, lane.waiting = lane.waiting[:MAX_BATCH], lane.waiting[MAX_BATCH:]
            if not batch:
                del self._busy[instance_id]
                return
            lane.members = batch
            batch[0].batch = batch  # before ``held``: its thread reads them in this order
            batch[0].held = instance_id
        batch[0].ready.set()


_lanes: PerEngine[Lanes] = PerEngine(Lanes)


def lanes_of(engine: Engine) -> Lanes:
    return _lanes.of(engine.db.engine)


__all__ = ["MAX_BATCH", "Lanes", "Queued", "Turn", "lanes_of"]
