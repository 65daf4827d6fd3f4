"""The effective configuration, frozen when an instance is accepted (seed 003 §3, R-3.1,
R-11.3).

A running instance must not change behaviour because the engine was upgraded or an
operator changed a limit. So admission resolves, once, everything that shapes how the
instance runs and stores it with the instance (``weave_instances.config``, canonical exact
JSON):

- ``limits``: every engine limit (``weave_core.foundation.limits``) as it was at start — what the
  instance's steps check while it runs (largest value, attempts per task, plan changes per
  advance, unmatched signals and their retention, snapshot size) and what its definition
  was compiled under;
- ``steps``: for every leaf step, the values its kind filled in from its defaults because
  the definition left them out (retry policy, timeouts, ``attempts_per_round``, parameter
  versions …);
- ``defaults``: the instance-level values resolved from defaults (``failure_policy``,
  ``deadline_seconds``) and the lease length of a task whose step sets neither a heartbeat
  nor a start-to-close timeout (``lease_seconds``: written into such a task as its
  heartbeat timeout when it is created, :func:`task_spec`).

Instances started alike share one stored copy: ``weave_instance_configs`` holds each
distinct configuration once, under its content hash, and the instance row carries only
``config_hash``. The runtime reads that hash with the instance row it locks anyway and
finds the parsed configuration in a per-process cache (a miss reads the one row, like the
program cache reads a definition): no extra statement on the hot path.
:func:`instance_limits` gives the limits, and the program cache compiles the pinned
definition with the frozen step values written in and under the frozen limits
(:func:`effective_document`, ``ProgramCache.for_instance``). A changed default or limit
therefore applies to instances started after the change only. Instances started before
revision 0007 (``config_hash`` NULL) keep using the engine's current values.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from functools import lru_cache
from typing import Any, Final

import sqlalchemy as sa
from pydantic import BaseModel
from sqlalchemy.engine import Connection

from weave_core.dispatch.model import DEFAULT_LEASE_SECONDS, TaskSpec
from weave_core.foundation import exactjson
from weave_core.foundation.exactjson import JSON
from weave_core.foundation.limits import Limits
from weave_core.planning.program import Program
from weave_core.storage.schema import weave_instance_configs
from weave_core.storage.statements import run_prebuilt

SCHEMA_VERSION: Final = 1
_TEMPLATES: Final = frozenset({"input", "output_schema", "input_schema", "trace_key",
                               "resource_key", "correlation_key", "when", "classify"})
"""Members whose values are templates or schemas, never steps: the merge does not enter."""


def _plain(value: Any) -> JSON:
    """A config value as exact JSON (Decimals kept, enums by value, tuples as lists)."""
    if isinstance(value, BaseModel):
        return {k: _plain(v) for k, v in value.model_dump(mode="python").items()}
    if isinstance(value, Enum):
        return _plain(value.value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _defaults_of(model: BaseModel) -> dict[str, JSON]:
    """The fields of ``model`` that came from defaults (recursively; ``None`` left out)."""
    out: dict[str, JSON] = {}
    for name, value in model:
        if name not in model.model_fields_set:
            if value is not None:
                out[name] = _plain(value)
        elif isinstance(value, BaseModel):
            inner = _defaults_of(value)
            if inner:
                out[name] = inner
    return out


def step_defaults(program: Program) -> dict[str, JSON]:
    """Per leaf step, what its kind took from defaults (see the module docstring)."""
    out: dict[str, JSON] = {}
    for step_id in program.step_ids():
        if program.is_composite(step_id):
            continue
        filled = _defaults_of(program.config(step_id))
        if filled:
            out[step_id] = filled
    return out


def freeze(program: Program, limits: Limits, *, failure_policy: str,
           deadline_seconds: int) -> str:
    """The effective configuration of an instance of ``program`` accepted now (JSON text;
    computed once per program and values: programs are cached and immutable)."""
    return _freeze(program, limits, failure_policy, deadline_seconds)


@lru_cache(maxsize=256)
def _freeze(program: Program, limits: Limits, failure_policy: str, deadline_seconds: int) -> str:
    return exactjson.dumps({
        "schema_version": SCHEMA_VERSION,
        "limits": dataclasses.asdict(limits),
        "steps": step_defaults(program),
        "defaults": {"failure_policy": failure_policy, "deadline_seconds": deadline_seconds,
                     "lease_seconds": DEFAULT_LEASE_SECONDS},
    })


@dataclass(frozen=True)
class Frozen:
    """One stored configuration, parsed (shared: every instance started alike has it)."""

    key: str
    """Its content hash: the instance's ``config_hash`` and a program cache key part."""
    limits: Limits
    steps: Mapping[str, JSON]
    lease_seconds: int | None = None
    """The lease of a task whose step fixes none (no heartbeat, no start-to-close)."""


def parse(text: str, engine_limits: Limits) -> Frozen:
    """The stored configuration ``text``; a limit it does not name (added by a later
    engine) takes the engine's value."""
    raw = exactjson.loads_stored(text)
    assert isinstance(raw, dict)
    stored = raw.get("limits") or {}
    names = {f.name for f in dataclasses.fields(Limits)}
    limits = dataclasses.replace(engine_limits, **{
        k: int(v) for k, v in stored.items() if k in names})
    lease = (raw.get("defaults") or {}).get("lease_seconds")
    return Frozen(exactjson.content_hash(raw), limits, raw.get("steps") or {},
                  None if lease is None else int(lease))


class _Cache:
    """Parsed configurations by hash, per process (a bounded LRU; thread-safe). An entry
    remembers the engine limits it was parsed against (by identity: an engine's limits
    object never changes), so a hit costs no hashing of the limits."""

    def __init__(self, size: int = 512) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._items: OrderedDict[str, tuple[Limits, Frozen]] = OrderedDict()

    def get(self, key: str, engine_limits: Limits) -> Frozen | None:
        with self._lock:
            found = self._items.get(key)
            if found is None or found[0] is not engine_limits:
                return None
            self._items.move_to_end(key)
            return found[1]

    def put(self, key: str, engine_limits: Limits, frozen: Frozen) -> Frozen:
        with self._lock:
            self._items[key] = (engine_limits, frozen)
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return frozen


_cache = _Cache()
_texts: OrderedDict[str, str] = OrderedDict()
"""Stored configuration texts by hash, for the instance view (rows never change)."""
_texts_lock = threading.Lock()


def _insert_config() -> sa.Insert:
    c = weave_instance_configs
    return (sa.insert(c).values({n: sa.bindparam(n) for n in ("config_hash", "config",
                                                              "created_at")})
            .prefix_with("IGNORE", dialect="mysql").prefix_with("IGNORE", dialect="mariadb")
            .prefix_with("OR IGNORE", dialect="sqlite"))


def store_txn(conn: Connection, text: str, engine_limits: Limits, now: datetime) -> str:
    """Keep ``text`` (once per distinct content) and return its hash for the instance."""
    frozen = parse(text, engine_limits)
    # Queued in a start's deferring block: 0 rows (already kept) or 1, both fine.
    run_prebuilt(conn, "store_config", _insert_config,
                 {"config_hash": frozen.key, "config": text, "created_at": now}, queue=True)
    _cache.put(frozen.key, engine_limits, frozen)
    _remember(frozen.key, text)  # a rolled-back start leaves no instance naming it
    return frozen.key


def frozen_of(conn: Connection, engine_limits: Limits, key: str | None) -> Frozen | None:
    """The configuration an instance was accepted with (None: started before 0007).
    Served from the process cache; read once per process and hash otherwise."""
    if key is None:
        return None
    found = _cache.get(key, engine_limits)
    if found is not None:
        return found
    c = weave_instance_configs
    text = conn.execute(sa.select(c.c.config).where(c.c.config_hash == key)).scalar_one()
    return _cache.put(key, engine_limits, parse(text, engine_limits))


def instance_limits(conn: Connection, engine_limits: Limits, key: str | None) -> Limits:
    """The limits an instance runs under: frozen at its start, or the engine's (NULL)."""
    frozen = frozen_of(conn, engine_limits, key)
    return engine_limits if frozen is None else frozen.limits


def task_spec(conn: Connection, engine_limits: Limits, key: str | None,
              spec: TaskSpec) -> TaskSpec:
    """``spec`` with the lease length frozen at start written in, when its step fixes none
    (the dispatch layer's default would otherwise be read when the task is claimed)."""
    frozen = frozen_of(conn, engine_limits, key)
    if frozen is None or frozen.lease_seconds is None or spec.heartbeat_timeout_s is not None \
            or spec.start_to_close_s is not None:
        return spec
    return dataclasses.replace(spec, heartbeat_timeout_s=frozen.lease_seconds)


def read_config(conn: Connection, key: str | None) -> JSON:
    """The stored configuration as JSON, for the instance view (stored rows never change:
    the text is kept per process by hash, so a page costs no statement for it)."""
    if key is None:
        return None
    with _texts_lock:
        text = _texts.get(key)
    if text is None:
        c = weave_instance_configs
        text = conn.execute(sa.select(c.c.config).where(c.c.config_hash == key)
                            ).scalar_one_or_none()
        if text is None:
            return None
        _remember(key, text)
    return exactjson.loads_stored(text)


def _remember(key: str, text: str) -> None:
    with _texts_lock:
        _texts[key] = text
        _texts.move_to_end(key)
        while len(_texts) > 512:
            _texts.popitem(last=False)


def _merge(target: dict[str, Any], filled: Mapping[str, Any]) -> None:
    for key, value in filled.items():
        if key not in target:
            target[key] = value
        elif isinstance(value, Mapping) and isinstance(target[key], dict):
            _merge(target[key], value)


def _walk(node: Any, steps: Mapping[str, JSON]) -> None:
    if isinstance(node, list):
        for item in node:
            _walk(item, steps)
    elif isinstance(node, dict):
        step_id = node.get("id")
        if isinstance(step_id, str) and "kind" in node and isinstance(steps.get(step_id), dict):
            _merge(node, steps[step_id])
        for key, value in node.items():
            if key not in _TEMPLATES:
                _walk(value, steps)


def effective_document(document: JSON, steps: Mapping[str, JSON]) -> JSON:
    """``document`` with the frozen step values written in where it left them out."""
    doc = exactjson.canonicalize(document)
    if steps:
        _walk(doc.get("steps") if isinstance(doc, dict) else None, steps)
    return doc


__all__ = [
    "SCHEMA_VERSION",
    "Frozen",
    "effective_document",
    "freeze",
    "frozen_of",
    "instance_limits",
    "parse",
    "read_config",
    "step_defaults",
    "store_txn",
    "task_spec",
]
