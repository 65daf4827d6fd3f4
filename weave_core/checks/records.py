"""I4-I7: audit of every transition, counters and limits, nothing overdue, no state
from a superseded attempt."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from weave_core.checks.model import CheckContext, Violation, check, rows

_UNSETTLED = ("PENDING", "RUNNING")


@check("I4", "transition_without_audit")
def transitions_without_audit(conn: Connection, ctx: CheckContext) -> list[Violation]:
    """Every history row points at the audit row written in its transaction."""
    found = rows(conn, ctx, """
        SELECT t.instance_id, t.revision, t.kind, t.audit_id
        FROM weave_instances i JOIN weave_transitions t ON t.instance_id = i.instance_id
        LEFT JOIN weave_audit a ON a.id = t.audit_id
        WHERE i.namespace = :ns AND (a.id IS NULL OR a.namespace <> i.namespace)
        ORDER BY t.instance_id, t.revision""")
    return [Violation("I4", "transition_without_audit", ctx.namespace, "workflow",
                      r["instance_id"], f"revision {r['revision']} ({r['kind']}) has no audit "
                      "entry", {"revision": int(r["revision"]), "audit_id": r["audit_id"]})
            for r in found]


@check("I4", "history_gap")
def history_gaps(conn: Connection, ctx: CheckContext) -> list[Violation]:
    """An instance at revision n has exactly the history rows 1..n."""
    found = rows(conn, ctx, """
        SELECT i.instance_id, i.revision, COUNT(t.revision) AS n, MAX(t.revision) AS top
        FROM weave_instances i LEFT JOIN weave_transitions t ON t.instance_id = i.instance_id
        WHERE i.namespace = :ns
        GROUP BY i.instance_id, i.revision
        HAVING COUNT(t.revision) <> i.revision OR COALESCE(MAX(t.revision), 0) <> i.revision
        ORDER BY i.instance_id""")
    return [Violation("I4", "history_gap", ctx.namespace, "workflow", r["instance_id"],
                      f"at revision {r['revision']} with {r['n']} history rows (highest "
                      f"{r['top']})", {"revision": int(r["revision"]), "rows": int(r["n"])})
            for r in found]


@check("I4", "task_event_gap")
def task_event_gaps(conn: Connection, ctx: CheckContext) -> list[Violation]:
    """A task at revision n has a status event for each of its revisions 1..n."""
    found = rows(conn, ctx, """
        SELECT t.task_id, t.revision, COUNT(DISTINCT e.revision) AS n,
               MAX(e.revision) AS top
        FROM weave_tasks t LEFT JOIN weave_task_events e ON e.task_id = t.task_id
        WHERE t.namespace = :ns
        GROUP BY t.task_id, t.revision
        HAVING COUNT(DISTINCT e.revision) <> t.revision
            OR COALESCE(MAX(e.revision), 0) <> t.revision
        ORDER BY t.task_id""")
    return [Violation("I4", "task_event_gap", ctx.namespace, "task", r["task_id"],
                      f"at revision {r['revision']} with events for {r['n']} revisions "
                      f"(highest {r['top']})", {"revision": int(r["revision"])})
            for r in found]


@check("I4", "operation_without_audit")
def operations_without_audit(conn: Connection, ctx: CheckContext) -> list[Violation]:
    """Every accepted control or review operation has its audit entry."""
    found = rows(conn, ctx, """
        SELECT o.operation_id, o.instance_id, o.kind FROM weave_operations o
        WHERE o.namespace = :ns AND NOT EXISTS (
            SELECT 1 FROM weave_audit a WHERE a.namespace = o.namespace
              AND a.object_type = 'workflow' AND a.object_id = o.instance_id
              AND a.operation_id = o.operation_id)
        ORDER BY o.operation_id""")
    return [Violation("I4", "operation_without_audit", ctx.namespace, "operation",
                      r["operation_id"], f"{r['kind']} of {r['instance_id']} has no audit "
                      "entry", {"instance_id": r["instance_id"]}) for r in found]


@check("I5", "queue_counter")
def queue_counters(conn: Connection, ctx: CheckContext) -> list[Violation]:
    """A queue's outstanding count (its row less its release shards) equals its unsettled
    tasks (one statement, one snapshot) and stays within its capacity, unless an operator
    lowered the capacity below what it held."""
    found = rows(conn, ctx, """
        SELECT q.name, q.capacity, q.outstanding - COALESCE((SELECT SUM(r.released)
             FROM weave_capacity_releases r WHERE r.namespace = q.namespace
             AND r.counter = q.name), 0) AS outstanding,
          (SELECT COUNT(*) FROM weave_tasks t WHERE t.namespace = q.namespace
             AND t.queue = q.name AND t.status IN :unsettled) AS tasks,
          (SELECT COUNT(*) FROM weave_audit a WHERE a.namespace = q.namespace
             AND a.object_type = 'queue' AND a.object_id = q.name
             AND a.action = 'queue.capacity_set') AS changes
        FROM weave_queues q WHERE q.namespace = :ns ORDER BY q.name""", unsettled=_UNSETTLED)
    out: list[Violation] = []
    for r in found:
        held, capacity, tasks = int(r["outstanding"]), int(r["capacity"]), int(r["tasks"])
        if held != tasks:
            out.append(Violation("I5", "queue_counter", ctx.namespace, "queue", r["name"],
                                 f"outstanding {held} but {tasks} unsettled tasks",
                                 {"outstanding": held, "tasks": tasks}))
        if tasks > capacity and not r["changes"]:
            out.append(Violation("I5", "queue_over_capacity", ctx.namespace, "queue",
                                 r["name"], f"{tasks} unsettled tasks over capacity {capacity}",
                                 {"tasks": tasks, "capacity": capacity}))
    return out


@check("I5", "quota_counter")
def quota_counters(conn: Connection, ctx: CheckContext) -> list[Violation]:
    """The namespace's outstanding count equals its unsettled tasks, within its quota."""
    found = rows(conn, ctx, """
        SELECT q.task_quota, q.outstanding - COALESCE((SELECT SUM(r.released)
             FROM weave_capacity_releases r WHERE r.namespace = q.namespace
             AND r.counter = ''), 0) AS outstanding,
          (SELECT COUNT(*) FROM weave_tasks t WHERE t.namespace = q.namespace
             AND t.status IN :unsettled) AS tasks,
          (SELECT COUNT(*) FROM weave_audit a WHERE a.namespace = q.namespace
             AND a.object_type = 'namespace' AND a.object_id = q.namespace
             AND a.action = 'namespace.quota_set') AS changes
        FROM weave_namespace_quotas q WHERE q.namespace = :ns""", unsettled=_UNSETTLED)
    out: list[Violation] = []
    for r in found:
        held, quota, tasks = int(r["outstanding"]), int(r["task_quota"]), int(r["tasks"])
        if held != tasks:
            out.append(Violation("I5", "quota_counter", ctx.namespace, "namespace",
                                 ctx.namespace, f"outstanding {held} but {tasks} unsettled "
                                 "tasks", {"outstanding": held, "tasks": tasks}))
        if tasks > quota and not r["changes"]:
            out.append(Violation("I5", "quota_exceeded", ctx.namespace, "namespace",
                                 ctx.namespace, f"{tasks} unsettled tasks over quota {quota}",
                                 {"tasks": tasks, "quota": quota}))
    return out


@check("I6", "overdue")
def overdue_rows(conn: Connection, ctx: CheckContext) -> list[Violation]:
    """No due row (pending advance, inbox row, task timeout) later than the grace."""
    cutoff = ctx.now - ctx.grace
    out: list[Violation] = []
    for table, due, key, where in (
        ("weave_pending_advances", "due_at", "id", "state = 'PENDING'"),
        ("weave_inbox", "available_at", "id", "state = 'PENDING'"),
        ("weave_tasks", "timeout_at", "task_id", "timeout_at IS NOT NULL"),
    ):
        found = rows(conn, ctx, f"""
            SELECT {key} AS id, {due} AS due FROM {table}
            WHERE {where} AND {due} < :cutoff AND namespace = :ns
            ORDER BY {due}, {key}""", cutoff=cutoff)
        out += [Violation("I6", "overdue", ctx.namespace, table.removeprefix("weave_"),
                          str(r["id"]), f"due at {r['due']}, more than "
                          f"{ctx.grace.total_seconds():g} s before {ctx.now}",
                          {"due_at": str(r["due"])}) for r in found]
    return out


@check("I7", "superseded_attempt")
def superseded_attempts(conn: Connection, ctx: CheckContext) -> list[Violation]:
    """Only a task's current attempt settles it: no other attempt succeeded, a succeeded
    task's current attempt succeeded, and at most one attempt of a task is open."""
    found = rows(conn, ctx, """
        SELECT t.task_id, t.status, t.current_attempt_id,
          SUM(CASE WHEN a.outcome = 'succeeded' AND a.attempt_id <> t.current_attempt_id
              THEN 1 ELSE 0 END) AS stale,
          SUM(CASE WHEN a.outcome IS NULL THEN 1 ELSE 0 END) AS open,
          SUM(CASE WHEN a.attempt_id = t.current_attempt_id AND a.outcome = 'succeeded'
              THEN 1 ELSE 0 END) AS current_ok
        FROM weave_tasks t JOIN weave_task_attempts a ON a.task_id = t.task_id
        WHERE t.namespace = :ns
        GROUP BY t.task_id, t.status, t.current_attempt_id
        HAVING SUM(CASE WHEN a.outcome = 'succeeded' AND a.attempt_id <> t.current_attempt_id
                   THEN 1 ELSE 0 END) > 0
            OR SUM(CASE WHEN a.outcome IS NULL THEN 1 ELSE 0 END) > 1
            OR (t.status = 'SUCCEEDED' AND SUM(CASE WHEN a.attempt_id = t.current_attempt_id
                AND a.outcome = 'succeeded' THEN 1 ELSE 0 END) = 0)
        ORDER BY t.task_id""")
    return [Violation("I7", "superseded_attempt", ctx.namespace, "task", r["task_id"],
                      f"{r['status']}: {r['stale']} superseded attempts succeeded, "
                      f"{r['open']} open, current attempt {r['current_attempt_id']} "
                      f"{'succeeded' if r['current_ok'] else 'did not succeed'}",
                      {"stale": int(r["stale"]), "open": int(r["open"])}) for r in found]


__all__ = ["queue_counters"]
