"""The instance list (the API's filters, cursor paging, a self-refreshing table) and one
instance: its graph, the selected step's records, the timeline, operations and actions."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from weave_core.access.identity import Permission
from weave_core.definitions.store import get_definition
from weave_core.engine import Engine
from weave_core.foundation.errors import Problem, ValidationError
from weave_core.runtime import InstanceStatus
from weave_core.runtime.reads import ListFilter, describe_instance, list_instances, read_history
from weave_http.routes.workflows import utc_time
from weave_http.ui.graph import render_graph, states_of
from weave_http.ui.pages_actions import PERMISSION
from weave_http.ui.queries import attempts_of, wait_reasons
from weave_http.ui.render import page
from weave_http.ui.session import Session

FILTERS = ("status", "definition_id", "version", "paused", "created_after", "created_before")
PAGE_SIZE = 50
HISTORY_PAGE = 200


def _bad(name: str, message: str) -> ValidationError:
    return ValidationError(f"invalid filter {name!r}: {message}",
                           [Problem(f"$.{name}", "invalid_query", message)])


def _time(name: str, raw: str) -> datetime:
    try:
        return utc_time(raw)
    except ValueError:
        raise _bad(name, "a time such as 2025-01-31T12:00 (UTC)") from None


def parse_filters(query: Mapping[str, str]) -> tuple[ListFilter, dict[str, str]]:
    """The list filters of a query string (422 for a bad one) and their non-empty values."""
    given = {k: query[k].strip() for k in FILTERS if query.get(k, "").strip()}
    status = given.get("status")
    if status is not None and status not in {s.value for s in InstanceStatus}:
        raise _bad("status", "one of " + ", ".join(s.value for s in InstanceStatus))
    paused = given.get("paused")
    if paused is not None and paused not in ("true", "false"):
        raise _bad("paused", "true or false")
    for name in ("definition_id", "version"):
        if len(given.get(name, "")) > 128:
            raise _bad(name, "at most 128 characters")
    filters = ListFilter(
        status=None if status is None else InstanceStatus(status),
        definition_id=given.get("definition_id"), version=given.get("version"),
        paused=None if paused is None else paused == "true",
        created_after=(None if "created_after" not in given
                       else _time("created_after", given["created_after"])),
        created_before=(None if "created_before" not in given
                        else _time("created_before", given["created_before"])),
    )
    return filters, given


async def instance_list(request: Request, engine: Engine, session: Session) -> Response:
    filters, given = parse_filters(request.query_params)
    cursor = request.query_params.get("cursor") or None
    if cursor is not None and len(cursor) > 512:
        raise _bad("cursor", "pass back the link's cursor unchanged")

    def _read() -> tuple[list[Any], str | None, dict[str, str]]:
        views, next_cursor = list_instances(engine.db, session.namespace, filters,
                                            cursor=cursor, limit=PAGE_SIZE)
        return views, next_cursor, wait_reasons(engine.db, views)

    views, next_cursor, reasons = await run_in_threadpool(_read)
    rows = [{**v.to_json(), "wait": reasons.get(v.instance_id, "")} for v in views]
    base = f"/ui/n/{session.namespace}/instances"
    next_url = None if next_cursor is None else base + "?" + urlencode(
        {**given, "cursor": next_cursor})
    template = "instance_rows.html" if request.query_params.get("partial") == "1" \
        else "instances.html"
    return page(template, session=session, nav="instances", rows=rows, given=given,
                statuses=[s.value for s in InstanceStatus], next_url=next_url,
                first_url=base + ("?" + urlencode(given) if given else ""),
                paged=cursor is not None, refresh_url=base + "?" + urlencode(
                    {**given, **({"cursor": cursor} if cursor else {}), "partial": "1"}))


def _by_step(detail: dict[str, Any]) -> dict[str, dict[str, list[Any]]]:
    """The instance view's lists grouped by step id (activations, tasks, waits, ...)."""
    grouped: dict[str, dict[str, list[Any]]] = {}

    def put(step_id: str | None, key: str, item: Any) -> None:
        if step_id is not None:
            grouped.setdefault(step_id, {}).setdefault(key, []).append(item)

    step_of_activation = {a["activation_id"]: a["step_id"] for a in detail["activations"]}
    for key in ("activations", "tasks", "waits"):
        for item in detail.get(key, []):
            put(item.get("step_id"), key, item)
    for r in detail.get("poll_rounds", []):
        put(step_of_activation.get(r["activation_id"]), "poll_rounds", r)
    for s in detail.get("signals", []):
        target = s.get("consumed_by_activation_id") or s.get("target_activation_id")
        put(step_of_activation.get(target), "signals", s)
    for op in detail.get("operations", []):
        put(op.get("step_id"), "operations", op)
    return grouped


async def instance_page(request: Request, engine: Engine, session: Session) -> Response:
    ns = session.namespace
    wid = str(request.path_params["workflow_id"])
    selected = request.query_params.get("step") or None
    after = request.query_params.get("after", "0")
    if not after.isascii() or not after.isdigit() or len(after) > 15:
        raise _bad("after", "a revision number")

    def _read() -> tuple[dict[str, Any], Any, list[dict[str, Any]], int | None,
                         dict[str, list[dict[str, Any]]]]:
        detail = describe_instance(engine.db, ns, wid)
        record = get_definition(engine.db, ns, detail["definition_id"], detail["version"])
        history, more = read_history(engine.db, ns, wid, after_revision=int(after),
                                     limit=HISTORY_PAGE)
        task_ids = sorted({t["task_id"] for t in detail["tasks"]}
                          | {r["task_id"] for r in detail.get("poll_rounds", [])})
        return detail, record, history, more, attempts_of(engine.db, ns, task_ids)

    detail, record, history, more, attempts = await run_in_threadpool(_read)
    base = f"/ui/n/{ns}/instances/{wid}"
    graph = render_graph(record.document, states_of(detail["steps"]),
                         href=lambda step_id: base + "?" + urlencode({"step": step_id})
                         + "#step-detail",
                         selected=selected, title=f"graph of {detail['definition_id']} "
                         f"version {detail['version']}")
    steps = {s["step_id"]: s for s in detail["steps"]}
    grouped = _by_step(detail)
    if selected is not None and selected not in steps and selected not in _ids(record.document):
        raise ValidationError("no such step", [Problem("$.step", "step_not_found",
                                                       f"no step {selected!r} here")])
    return page(
        "instance.html", session=session, nav="instances", w=detail, graph=graph,
        history=history, more_history=more, selected=selected,
        step=steps.get(selected) if selected else None,
        records=grouped.get(selected, {}) if selected else {},
        attempts=attempts, base=base, done=_done(request),
        op=lambda kind: f"ui-{kind}-{secrets.token_hex(6)}",
        reviewable=[s for s in detail["steps"]
                    if s["phase"] in ("FAILED", "CANCELLED", "NEEDS_REVIEW")],
        can_control=session.can(Permission.CONTROL), can_review=session.can(Permission.REVIEW),
        can_signal=session.can(Permission.SIGNAL),
        open_signal_waits=[x for x in detail.get("waits", [])
                           if x["kind"] == "signal" and x["state"] == "OPEN"],
    )


def _done(request: Request) -> str | None:
    """The banner after an action (only a known action name is ever echoed)."""
    done = request.query_params.get("done")
    return done if done in PERMISSION else None


def _ids(document: Any) -> set[str]:
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            if isinstance(value.get("id"), str) and "kind" in value:
                found.add(value["id"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(document.get("steps") if isinstance(document, Mapping) else None)
    return found


__all__ = ["instance_list", "instance_page", "parse_filters"]
