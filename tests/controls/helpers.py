"""Drivers for controls tests: operations as an operator, rows as the database holds them."""

from __future__ import annotations

import secrets
from typing import Any

from tests.runtime.helpers import instance
from weave_core.engine import Engine
from weave_core.runtime.controls import (
    ConcludeRequest,
    ControlRequest,
    OperationOutcome,
    RecoverRequest,
    ResolveRequest,
    cancel,
    conclude,
    pause,
    recover,
    resolve,
    resume,
)

OPERATOR = "token:operator"


def op_id() -> str:
    return f"op-{secrets.token_hex(6)}"


def version(engine: Engine, wid: str) -> int:
    return int(instance(engine, wid).control_version)


def control(engine: Engine, ns: str, wid: str, what: str, *, expected: int | None = None,
            operation_id: str | None = None, reason: str = "ops") -> OperationOutcome:
    fn = {"pause": pause, "resume": resume, "cancel": cancel}[what]
    request = ControlRequest(version(engine, wid) if expected is None else expected,
                             operation_id or op_id(), reason)
    return fn(engine, ns, wid, request, actor=OPERATOR)


def do_conclude(engine: Engine, ns: str, wid: str, step_id: str, conclusion: str,
                evidence: Any = None, **kw: Any) -> OperationOutcome:
    return conclude(engine, ns, wid, ConcludeRequest(
        kw.pop("operation_id", op_id()), kw.pop("reason", "checked"), step_id, conclusion,
        evidence, **kw), actor=OPERATOR)


def do_resolve(engine: Engine, ns: str, wid: str, outcome: str = "continue",
               **kw: Any) -> OperationOutcome:
    return resolve(engine, ns, wid, ResolveRequest(
        kw.pop("operation_id", op_id()), kw.pop("reason", "resolved"), outcome), actor=OPERATOR)


def do_recover(engine: Engine, ns: str, wid: str, step_id: str, state_version: int,
               **kw: Any) -> OperationOutcome:
    return recover(engine, ns, wid, RecoverRequest(
        kw.pop("operation_id", op_id()), kw.pop("reason", "re-run"), step_id, state_version,
        **kw), actor=OPERATOR)
