"""A process that reports one task through the step transaction and kills itself with
SIGKILL at a labelled point of that transaction (kill -9 tests of the hot path).

Usage: ``python -m tests.runtime.step_process URL NAMESPACE TASK_ID ATTEMPT_ID POINT``.
``POINT`` is ``settle`` (the task's UPDATE is about to go out), ``inbox`` (the inbox row's
INSERT), ``successor`` (the successor task's INSERT) or ``commit`` (everything sent, the
COMMIT not yet). The process dies there: no rollback, no clean shutdown.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from sqlalchemy import event

from weave_core.dispatch import HandlerRef, Report, ReportOutcome
from weave_core.engine import Engine
from weave_core.runtime.step import ClaimNext, complete_step

PREFIXES = {"settle": ("UPDATE weave_tasks SET status",  # the task alone (SQLite)
                       "UPDATE weave_tasks, weave_task_attempts SET"),  # with its attempt
            "inbox": ("INSERT INTO weave_inbox",), "successor": ("INSERT INTO weave_tasks",)}


def main() -> None:
    url, namespace, task_id, attempt_id, point = sys.argv[1:6]
    engine = Engine.open(url, node_id="step-killed")

    def _die(*_: Any) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    if point == "commit":
        event.listen(engine.db.engine, "commit", _die)
    else:
        prefix = PREFIXES[point]

        def _before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            if statement.startswith(prefix):
                _die()

        event.listen(engine.db.engine, "before_cursor_execute", _before)
    complete_step(engine, namespace=namespace, task_id=task_id, attempt_id=attempt_id,
                  report=Report(ReportOutcome.SUCCEEDED, output={"killed": point}),
                  actor="worker:killed",
                  claim_next=ClaimNext("w-killed", [HandlerRef("b", "1")], 1))
    print("not killed", flush=True)


if __name__ == "__main__":
    main()
