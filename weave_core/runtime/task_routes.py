"""Where the tasks this process handed out belong, so that their reports skip a read.

A task handed straight to a worker — in a step's answer (``claim_next``) or to a claimer
parked in the long poll when a start created it (``dispatch.handoff``) — has a route:
task id → namespace, queue, owning activation, instance and its queues. These are facts
that never change for a task (the instance status is a hint the locked chain re-checks),
so the worker's report finds its chain without the unlocked read (``step``). Bounded per
process; a miss, or a report that reaches another engine process, reads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from types import SimpleNamespace

from weave_core.dispatch.handoff import Handoff
from weave_core.dispatch.model import OwnerKind
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.per_process import PerEngine


class _Routes:
    SIZE = 65_536

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[str, SimpleNamespace] = OrderedDict()

    def put(self, task_id: str, route: SimpleNamespace) -> None:
        with self._lock:
            self._items[task_id] = route
            if len(self._items) > self.SIZE:
                self._items.popitem(last=False)

    def take(self, task_id: str) -> SimpleNamespace | None:
        with self._lock:
            return self._items.pop(task_id, None)


_routes: PerEngine[_Routes] = PerEngine(_Routes)


def _routes_of(engine: Engine) -> _Routes:
    return _routes.of(engine.db.engine)


def remember_routes(engine: Engine, handoff: Handoff, instance_id: str,
                    queues: tuple[str, ...], status: str) -> None:
    """Record the routes of the workflow tasks ``handoff`` started (after its commit)."""
    routes = _routes_of(engine)
    text = exactjson.dumps(list(queues))
    for claimed in handoff.claimed:
        routes.put(claimed.task_id, SimpleNamespace(
            namespace=handoff.namespace, queue=handoff.queue,
            owner_kind=OwnerKind.WORKFLOW_ACTIVATION.value,
            owner_id=handoff.owners[claimed.task_id], instance_id=instance_id,
            act_namespace=handoff.namespace, inst_namespace=handoff.namespace,
            queues=text, status=status))


def take_route(engine: Engine, task_id: str) -> SimpleNamespace | None:
    """The route of a task handed out here (once: the report that uses it consumes it)."""
    return _routes_of(engine).take(task_id)


__all__ = ["remember_routes", "take_route"]
