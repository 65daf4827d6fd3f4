"""``weave bench waitscan`` (S4): the tick's due scan stays flat from 1k to 1M waiting.

Starting 1M instances through the kernel would take about an hour (~300 starts/s), so the
scenario starts one real instance of each waiting shape with ``start_workflow`` (a timer a
day away, a signal wait) and clones every row the kernel wrote for it. The rows are found by
following the instance's ids through every table of the schema (no list of tables kept
here), and cloned with set-based ``INSERT … SELECT`` over MariaDB's Sequence engine tables
(``seq_A_to_B_step_2``), 50,000 instances per transaction. Clone ``n`` (odd: timer, even:
signal; the templates are 1 and 2) differs from its template only where instances must
differ: every kernel id, the correlation key in its input, the idempotency key and request
hash, its audit row id, and its timer's due time, spread 1-30 days ahead (deterministic from
``n``), so the due index holds a realistic spread and nothing comes due during the run.

At 1k, 10k, 100k and 1M waiting instances (cumulative; tiny stops at 10k, small at 100k) it
measures the tick's two due scans (``due_candidates``, median of 50, the measure of
``waits``) and, at the largest size, EXPLAINs the two statements the tick issued: the index
each uses and the rows the optimizer expects to examine.

It runs in a database of its own on the bench server (created, migrated, dropped), so every
size is exact whatever other scenarios left behind and a repetition starts empty. MariaDB
only (MySQL has no Sequence engine): elsewhere it refuses with a message saying so.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, Final

import pymysql
import sqlalchemy as sa
from sqlalchemy.engine import Connection, make_url

from weave_bench import BenchContext, Metric, scenario
from weave_bench.calibration import mysql_params
from weave_bench.runner import _drop_database, _scratch_database
from weave_bench.wait_scenarios import _publish, _scan_ms  # the measure of ``waits``
from weave_core.access.identity import CLI_ACTOR, create_namespace
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_core.runtime import StartRequest, start_workflow
from weave_core.runtime.tick import due_candidates
from weave_core.storage.db import Database
from weave_core.storage.migrate import upgrade
from weave_core.storage.schema import (
    metadata,
    weave_audit,
    weave_instances,
    weave_transitions,
    weave_waits,
)

SIZES: Final = (1_000, 10_000, 100_000, 1_000_000)
CHUNK: Final = 50_000
"""Clones per transaction (~600k rows): few commits, a bounded undo log."""
SPREAD_S: Final = 29 * 86_400
SCATTER: Final = 7_919
"""Clone ``n``'s timer is due ``n * SCATTER mod SPREAD_S`` seconds after its template's: a
prime coprime with ``SPREAD_S``, so distinct seconds, inserted out of due order."""
DUE_INDEXES: Final = {"weave_inbox": "ix_weave_inbox_due",
                      "weave_pending_advances": "ix_weave_pending_advances_due"}
KERNEL_ID: Final = re.compile(r"[a-z]+_[0-9a-f]{28}")
"""``dispatch.model.new_id``: a prefix, 12 hex digits of milliseconds, 16 random ones."""
KEY, IDEMPOTENCY = "order-", "waitscan-"
"""Prefixes of clone ``n``'s correlation key and idempotency key (then the tag, then n)."""
SHAPES: Final[tuple[tuple[str, list[Any]], ...]] = (
    ("far", [{"id": "nap", "kind": "timer", "seconds": 86400}]),
    ("sig", [{"id": "s", "kind": "signal", "name": "go",
              "correlation_key": {"$ref": "input.k"}}]),
)

Rows = tuple[tuple[sa.Table, dict[str, Any]], ...]


@dataclass(frozen=True)
class Template:
    """One genuine waiting instance and every row the kernel wrote for it."""

    number: int
    instance_id: str
    rows: Rows
    request: str
    """The canonical start request: its SHA-256 is the idempotency row's request hash."""
    request_hash: str

    @property
    def timer_due(self) -> datetime | None:
        dues = [r["due_at"] for t, r in self.rows if t is weave_waits and r["kind"] == "timer"]
        return dues[0] if dues else None


@dataclass(frozen=True)
class Cloner:
    """Clones ``n`` ≥ 3 of templates 1 and 2; ``tag`` makes their ids unique to this run."""

    namespace: str
    tag: str
    templates: tuple[Template, ...]
    audit_base: int
    """Clone ``n``'s audit rows get ids from ``audit_base + n * audit_span``: the one
    auto-increment id another row keeps (``weave_transitions.audit_id``)."""
    audit_span: int

    def template_of(self, n: int) -> Template:
        return self.templates[(n - 1) % len(self.templates)]

    def clone_id(self, kernel_id: str, n: int) -> str:
        """The id clone ``n`` has where its template has ``kernel_id`` (same shape)."""
        return f"{kernel_id[:-16]}{self.tag}{n:08x}"

    def key(self, n: int) -> str:
        return f"{KEY}{self.tag}-{n}"

    def idempotency_key(self, n: int) -> str:
        return f"{IDEMPOTENCY}{self.tag}-{n}"

    def clone(self, engine: Engine, first: int, last: int) -> None:
        """Materialise clones ``first`` … ``last``, ``CHUNK`` per transaction."""
        for lo in range(first, last + 1, CHUNK):
            engine.db.transaction(partial(self._chunk, lo=lo, hi=min(last, lo + CHUNK - 1)),
                                  name="bench_waitscan_clone")

    def _chunk(self, conn: Connection, lo: int, hi: int) -> None:
        i = weave_instances
        last = self.clone_id(self.template_of(hi).instance_id, hi)
        if conn.execute(sa.select(i.c.instance_id).where(i.c.instance_id == last)).first():
            return  # committed by an attempt whose COMMIT answer was lost
        step = len(self.templates)
        n = sa.literal_column("s.seq", sa.BigInteger)
        for template in self.templates:
            start = lo + (template.number - lo) % step
            if start > hi:
                continue
            seq = sa.text(f"seq_{start}_to_{hi}_step_{step} AS s")
            subs = self._substitutions(template, n)
            for table, row in template.rows:
                columns = [c for c in table.c
                           if c is not table.autoincrement_column or table is weave_audit]
                values = [self._value(template, subs, c, row[c.name], n) for c in columns]
                conn.execute(sa.insert(table).from_select(
                    [c.name for c in columns], sa.select(*values).select_from(seq)))

    def _value(self, template: Template, subs: dict[str, sa.ColumnElement[str]],
               column: sa.Column[Any], value: Any,
               n: sa.ColumnElement[int]) -> sa.ColumnElement[Any]:
        if value is None:
            return sa.null()
        if column is weave_audit.c.id or column is weave_transitions.c.audit_id:
            slot = sorted(r["id"] for t, r in template.rows if t is weave_audit).index(value)
            return self.audit_base + n * self.audit_span + slot
        if isinstance(value, datetime) and value == template.timer_due:
            return _due(template, n)
        if not isinstance(value, str):
            return sa.literal(value, column.type)
        if value in subs:
            return subs[value]
        expr: sa.ColumnElement[Any] = sa.literal(value, column.type)
        for old, new in subs.items():
            if old in value:
                expr = sa.func.replace(expr, old, new)
        return expr

    def _substitutions(self, template: Template,
                       n: sa.ColumnElement[int]) -> dict[str, sa.ColumnElement[str]]:
        """Template text → clone text: ids, keys, request hash, the due time's ISO form."""
        key = sa.func.concat(f"{KEY}{self.tag}-", n)
        subs: dict[str, sa.ColumnElement[str]] = {
            template.request_hash: sa.func.sha2(
                sa.func.replace(template.request, self.key(template.number), key), 256),
            self.idempotency_key(template.number): sa.func.concat(f"{IDEMPOTENCY}{self.tag}-", n),
            self.key(template.number): key,
        }
        hex_n = sa.func.lpad(sa.func.lower(sa.func.hex(n)), 8, "0")
        for _, row in template.rows:
            for value in row.values():
                if isinstance(value, str) and KERNEL_ID.fullmatch(value):
                    subs[value] = sa.func.concat(value[:-16], self.tag, hex_n)
        due = template.timer_due
        if due is not None:  # isoformat() leaves out a zero fraction
            spelled = "%Y-%m-%dT%H:%i:%s" + (".%f" if due.microsecond else "") + "Z"
            subs[due.isoformat() + "Z"] = sa.func.date_format(_due(template, n), spelled)
        return subs


def _due(template: Template, n: sa.ColumnElement[int]) -> sa.ColumnElement[datetime]:
    return sa.func.timestampadd(sa.literal_column("SECOND"), sa.func.mod(n * SCATTER, SPREAD_S),
                                template.timer_due)


def _rows_of(conn: Connection, instance_id: str) -> Rows:
    """Every row holding one of the instance's kernel ids, following the ids those rows hold
    (its gate, activations, operation) until nothing new turns up."""
    ids = {instance_id}
    found: dict[tuple[str, tuple[Any, ...]], tuple[sa.Table, dict[str, Any]]] = {}
    while True:
        for table in metadata.sorted_tables:
            keys = [c for c in table.c
                    if isinstance(c.type, sa.String) and not isinstance(c.type, sa.Text)]
            if not keys:
                continue
            for row in conn.execute(sa.select(table).where(
                    sa.or_(*(c.in_(sorted(ids)) for c in keys)))).mappings():
                pk = tuple(row[c.name] for c in table.primary_key)
                found[(table.name, pk)] = (table, dict(row))
        more = {v for _, row in found.values() for v in row.values()
                if isinstance(v, str) and KERNEL_ID.fullmatch(v)} - ids
        if not more:
            return tuple(found.values())
        ids |= more


def prepare(engine: Engine) -> Cloner:
    """A bench-only namespace, the two definitions and their two template instances."""
    tag = secrets.token_hex(4)
    ns = f"waitscan-{tag}"
    create_namespace(engine.db, ns)
    templates = []
    for number, (definition_id, steps) in enumerate(SHAPES, start=1):
        _publish(engine, ns, definition_id, steps)
        request = StartRequest(definition_id, "1", {"k": f"{KEY}{tag}-{number}"},
                               f"{IDEMPOTENCY}{tag}-{number}")
        canonical = exactjson.dumps(
            {"definition_id": definition_id, "version": "1", "input": request.input})
        if hashlib.sha256(canonical.encode()).hexdigest() != request.request_hash():
            raise RuntimeError("SHA2 of the canonical request is no longer the kernel's "
                               "request hash: clones would carry wrong hashes")
        started = start_workflow(engine, ns, request, actor=CLI_ACTOR).instance.instance_id
        rows = engine.db.read(partial(_rows_of, instance_id=started))
        templates.append(Template(number, started, rows, canonical, request.request_hash()))
    a = weave_audit
    base = engine.db.read(lambda conn: conn.execute(sa.func.max(a.c.id).select()).scalar_one())
    span = max(sum(t is a for t, _ in template.rows) for template in templates)
    return Cloner(ns, tag, tuple(templates), int(base), span)


@dataclass(frozen=True)
class Plan:
    """EXPLAIN of one single-table scan."""

    table: str
    key: str | None
    rows: int
    access: str
    extra: str


def explain_due_scans(engine: Engine) -> list[Plan]:
    """EXPLAIN the statements ``due_candidates`` sends (captured as sent, so the plan is the
    tick's own query, not a copy of it kept here)."""
    sent: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        sent.append((statement, parameters))

    sa.event.listen(engine.db.engine, "before_cursor_execute", capture)
    try:
        engine.db.read(lambda conn: due_candidates(conn, engine, 100), name="bench_explain")
    finally:
        sa.event.remove(engine.db.engine, "before_cursor_execute", capture)
    plans = []
    for table in DUE_INDEXES:
        statement, parameters = next(s for s in sent if re.search(rf"\bFROM {table}\b", s[0]))
        (row,) = engine.db.read(partial(_explain, statement=statement, parameters=parameters))
        plans.append(Plan(table, row["key"], int(row["rows"] or 0), str(row["type"]),
                          str(row["Extra"] or "")))
    return plans


def _explain(conn: Connection, statement: str, parameters: Any) -> list[Any]:
    return list(conn.exec_driver_sql(f"EXPLAIN {statement}", parameters).mappings())


@contextmanager
def _own_database(server_url: str) -> Iterator[Engine]:
    """An engine on a migrated database of this scenario alone, dropped afterwards."""
    if make_url(server_url).get_backend_name() not in ("mysql", "mariadb"):
        raise RuntimeError(f"waitscan needs MariaDB (its Sequence engine), not {server_url!r}")
    conn = pymysql.connect(**mysql_params(server_url))
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM information_schema.ENGINES "
                        "WHERE ENGINE = 'SEQUENCE' AND SUPPORT IN ('YES', 'DEFAULT')")
            (engines,) = cur.fetchone() or (0,)
    finally:
        conn.close()
    if not engines:
        raise RuntimeError("waitscan needs MariaDB's Sequence engine (seq_1_to_N tables) to "
                           "clone waiting instances; this server has none (MySQL?)")
    url = _scratch_database(server_url)
    db = None
    try:
        upgrade(url)
        db = Database.from_url(url, pool_size=2)
        yield Engine(db=db, plugins=PluginHost.from_entry_points(), limits=Limits(),
                     node_id=f"bench-{secrets.token_hex(3)}")
    finally:
        if db is not None:
            db.dispose()
        _drop_database(server_url, url)


def _waiting(engine: Engine, ns: str) -> int:
    i = weave_instances
    return int(engine.db.read(lambda conn: conn.execute(
        sa.select(sa.func.count()).select_from(i)
        .where(i.c.namespace == ns, i.c.status == "WAITING")).scalar_one()))


def _analyze(engine: Engine) -> None:
    """Fresh index statistics, as a server running for a while has them."""
    engine.db.transaction(lambda conn: conn.exec_driver_sql(
        f"ANALYZE TABLE {', '.join(DUE_INDEXES)}").all(), name="bench_analyze")


@scenario("waitscan",
          "S4: the tick's due scan at 1k → 1M waiting instances (SQL clones), EXPLAIN")
def waitscan(ctx: BenchContext) -> list[Metric]:
    sizes = [s for s in SIZES if s <= ctx.pick(10_000, 100_000, 1_000_000)]
    metrics: list[Metric] = []
    scans: dict[int, float] = {}
    with _own_database(ctx.mysql_server_url) as engine:
        cloner = prepare(engine)
        made, cloning = len(cloner.templates), 0.0
        for size in sizes:
            began = time.perf_counter()
            cloner.clone(engine, made + 1, size)
            cloning += time.perf_counter() - began
            made = size
            if _waiting(engine, cloner.namespace) != size:
                raise RuntimeError(f"expected {size} waiting instances after cloning")
            _analyze(engine)
            scans[size] = _scan_ms(engine)
            metrics.append(Metric(
                f"tick_scan_ms_{size}_waiting", scans[size], "ms",
                note="due_candidates (both due scans), median of 50; half timers due 1-30 "
                     "days ahead, half signal waits"))
        plans = explain_due_scans(engine)
    rows = sum(len(t.rows) for t in cloner.templates) / len(cloner.templates)
    small, large = sizes[0], sizes[-1]
    metrics += [
        Metric(f"tick_scan_ratio_{large}_to_{small}", scans[large] / scans[small], "ratio",
               note="target: flat (S4: the tick's scan time flat from 1k to 1M waiting)"),
        Metric("clone_s", cloning, "s",
               note=f"{large - len(cloner.templates)} instances ({rows:g} rows each on "
                    f"average) by INSERT … SELECT over seq tables, {CHUNK} per transaction"),
    ]
    for plan in plans:
        name = plan.table.removeprefix("weave_")
        metrics += [
            Metric(f"explain_{name}_uses_due_index", float(plan.key == DUE_INDEXES[plan.table]),
                   "bool", note=f"{large} waiting: key={plan.key} type={plan.access} "
                                f"Extra={plan.extra or '-'}"),
            Metric(f"explain_{name}_rows", float(plan.rows), "rows",
                   note=f"{large} waiting: rows the optimizer expects to examine"),
        ]
    return metrics


__all__ = ["Cloner", "Plan", "Template", "explain_due_scans", "prepare", "waitscan"]
