"""I1-I3: every instance terminal or explained, no duplicate task, activation or
consumption."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from weave_core.checks.model import CheckContext, Violation, check, rows

_UNSETTLED = ("PENDING", "RUNNING")
_OPEN_STATUSES = ("RUNNING", "WAITING", "CANCELLING", "NEEDS_REVIEW")
_SETTLES = ("step.succeeded", "step.failed", "step.cancelled")


@check("I1", "instance_unexplained")
def unexplained_instances(conn: Connection, ctx: CheckContext) -> list[Violation]:
    """A non-terminal instance must be paused, in review with a reason, or hold open work:
    an unsettled task, a pending inbox row, a due row other than its far deadline, or an
    open wait."""
    found = rows(conn, ctx, """
        SELECT i.instance_id, i.status FROM weave_instances i
        WHERE i.namespace = :ns AND i.status IN :open AND i.paused = 0
          AND NOT (i.status = 'NEEDS_REVIEW' AND i.review_reason IS NOT NULL)
          AND NOT EXISTS (
            SELECT 1 FROM weave_activations a JOIN weave_tasks t
              ON t.namespace = a.namespace AND t.owner_id = a.activation_id
            WHERE a.namespace = i.namespace AND a.instance_id = i.instance_id
              AND t.status IN :unsettled)
          AND NOT EXISTS (
            SELECT 1 FROM weave_activations a JOIN weave_tasks t
              ON t.namespace = a.namespace AND t.owner_id = a.activation_id
            JOIN weave_inbox b ON b.namespace = t.namespace AND b.source_task_id = t.task_id
            WHERE a.namespace = i.namespace AND a.instance_id = i.instance_id
              AND b.state = 'PENDING')
          AND NOT EXISTS (
            SELECT 1 FROM weave_pending_advances p
            WHERE p.instance_id = i.instance_id AND p.state = 'PENDING'
              AND NOT (p.kind = 'ROOT' AND p.ref = 'deadline' AND p.due_at > :now))
          AND NOT EXISTS (
            SELECT 1 FROM weave_waits w WHERE w.instance_id = i.instance_id
              AND w.state = 'OPEN')
        ORDER BY i.instance_id""", open=_OPEN_STATUSES, unsettled=_UNSETTLED)
    return [Violation("I1", "instance_unexplained", ctx.namespace, "workflow",
                      r["instance_id"],
                      f"{r['status']} with no open task, result, due row or wait, not paused "
                      "and not in review", {"status": r["status"]}) for r in found]


@check("I2", "duplicate_task")
def duplicate_tasks(conn: Connection, ctx: CheckContext) -> list[Violation]:
    """One task per activation, or one per poll round of a poll activation."""
    found = rows(conn, ctx, """
        SELECT t.owner_id, COUNT(*) AS tasks, COUNT(DISTINCT r.round) AS rounds
        FROM weave_tasks t LEFT JOIN weave_poll_rounds r ON r.task_id = t.task_id
        WHERE t.namespace = :ns AND t.owner_kind = 'workflow_activation'
        GROUP BY t.owner_id
        HAVING COUNT(*) > 1 AND COUNT(*) > COUNT(DISTINCT r.round)
        ORDER BY t.owner_id""")
    return [Violation("I2", "duplicate_task", ctx.namespace, "activation", r["owner_id"],
                      f"{r['tasks']} tasks for {r['rounds']} poll rounds (at most one task "
                      "per activation and round)",
                      {"tasks": int(r["tasks"]), "rounds": int(r["rounds"])}) for r in found]


@check("I2", "duplicate_activation")
def duplicate_activations(conn: Connection, ctx: CheckContext) -> list[Violation]:
    """At most one ACTIVE activation of a step of an instance at a time."""
    found = rows(conn, ctx, """
        SELECT a.instance_id, a.step_id, COUNT(*) AS active FROM weave_activations a
        WHERE a.namespace = :ns AND a.state = 'ACTIVE'
        GROUP BY a.instance_id, a.step_id HAVING COUNT(*) > 1
        ORDER BY a.instance_id, a.step_id""")
    return [Violation("I2", "duplicate_activation", ctx.namespace, "workflow",
                      r["instance_id"], f"step {r['step_id']} has {r['active']} active "
                      "activations", {"step_id": r["step_id"], "active": int(r["active"])})
            for r in found]


@check("I2", "recovery_activated_twice")
def recoveries_activating_twice(conn: Connection, ctx: CheckContext) -> list[Violation]:
    """A recovery operation starts at most one new activation."""
    found = rows(conn, ctx, """
        SELECT o.operation_id, o.instance_id, COUNT(*) AS activated
        FROM weave_operations o JOIN weave_transitions t
          ON t.instance_id = o.instance_id AND t.operation_id = o.operation_id
        WHERE o.namespace = :ns AND o.kind = 'review.recover'
          AND t.kind = 'step.activated'
        GROUP BY o.operation_id, o.instance_id HAVING COUNT(*) > 1
        ORDER BY o.operation_id""")
    return [Violation("I2", "recovery_activated_twice", ctx.namespace, "operation",
                      r["operation_id"], f"recovery of {r['instance_id']} activated "
                      f"{r['activated']} steps", {"instance_id": r["instance_id"],
                                                  "activated": int(r["activated"])})
            for r in found]


@check("I3", "duplicate_consumption")
def duplicate_consumptions(conn: Connection, ctx: CheckContext) -> list[Violation]:
    """One consumption per (namespace, source task, source revision)."""
    task = ctx.json_text("metadata", "$.source.task_id")
    revision = ctx.json_text("metadata", "$.source.source_revision")
    found = rows(conn, ctx, f"""
        SELECT object_id, {task} AS task_id, {revision} AS revision, COUNT(*) AS consumed
        FROM weave_audit
        WHERE namespace = :ns AND object_type = 'workflow'
          AND action = 'workflow.result.consumed'
        GROUP BY object_id, {task}, {revision} HAVING COUNT(*) > 1
        ORDER BY object_id""")
    return [Violation("I3", "duplicate_consumption", ctx.namespace, "task", str(r["task_id"]),
                      f"revision {r['revision']} consumed {r['consumed']} times by "
                      f"{r['object_id']}", {"instance_id": r["object_id"],
                                            "revision": str(r["revision"]),
                                            "consumed": int(r["consumed"])})
            for r in found]


@check("I3", "activation_settled_twice")
def activations_settled_twice(conn: Connection, ctx: CheckContext) -> list[Violation]:
    """An activation settles (succeeds, fails or is cancelled) once in the history."""
    found = rows(conn, ctx, """
        SELECT t.instance_id, t.activation_id, COUNT(*) AS settled
        FROM weave_instances i JOIN weave_transitions t ON t.instance_id = i.instance_id
        WHERE i.namespace = :ns AND t.kind IN :settles AND t.activation_id IS NOT NULL
        GROUP BY t.instance_id, t.activation_id HAVING COUNT(*) > 1
        ORDER BY t.instance_id, t.activation_id""", settles=_SETTLES)
    return [Violation("I3", "activation_settled_twice", ctx.namespace, "activation",
                      r["activation_id"], f"settled {r['settled']} times in the history of "
                      f"{r['instance_id']}", {"instance_id": r["instance_id"],
                                              "settled": int(r["settled"])}) for r in found]


@check("I3", "snapshot_changed")
def changed_snapshots(conn: Connection, ctx: CheckContext) -> list[Violation]:
    """An inbox row's frozen snapshot names the task and revision the row was keyed by."""
    task = ctx.json_text("b.snapshot", "$.task_id")
    revision = ctx.json_text("b.snapshot", "$.revision")
    found = rows(conn, ctx, f"""
        SELECT b.id, b.source_task_id, b.source_revision, {task} AS task_id,
               {revision} AS revision
        FROM weave_inbox b
        WHERE b.namespace = :ns
          AND (COALESCE({task}, '') <> b.source_task_id
               OR COALESCE(CAST({revision} AS {ctx.integer}), -1) <> b.source_revision)
        ORDER BY b.id""")
    return [Violation("I3", "snapshot_changed", ctx.namespace, "inbox", str(r["id"]),
                      f"snapshot names {r['task_id']} revision {r['revision']}, the row "
                      f"{r['source_task_id']} revision {r['source_revision']}", {})
            for r in found]


__all__ = ["unexplained_instances"]
