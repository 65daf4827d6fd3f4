"""Definitions (versions, a version's JSON and graph, the difference of two versions) and
queues (capacity, usage, waiting workers)."""

from __future__ import annotations

import difflib
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from weave_core.definitions.store import count_definitions, get_definition, list_versions
from weave_core.engine import Engine
from weave_core.foundation.errors import Problem, ValidationError
from weave_http.ui.graph import render_graph
from weave_http.ui.jsonview import pretty
from weave_http.ui.queries import queues_of
from weave_http.ui.render import page
from weave_http.ui.session import Session


async def definitions(request: Request, engine: Engine, session: Session) -> Response:
    items = await run_in_threadpool(count_definitions, engine.db, session.namespace)
    return page("definitions.html", session=session, nav="definitions", items=items)


async def definition(request: Request, engine: Engine, session: Session) -> Response:
    did = str(request.path_params["definition_id"])
    versions = await run_in_threadpool(list_versions, engine.db, session.namespace, did)
    return page("definition.html", session=session, nav="definitions", did=did,
                versions=[v.summary() for v in versions])


async def version(request: Request, engine: Engine, session: Session) -> Response:
    did = str(request.path_params["definition_id"])
    ver = str(request.path_params["version"])
    record = await run_in_threadpool(get_definition, engine.db, session.namespace, did, ver)
    graph = render_graph(record.document, {}, title=f"graph of {did} version {record.version}")
    return page("version.html", session=session, nav="definitions", record=record,
                graph=graph, text=pretty(record.document))


async def diff(request: Request, engine: Engine, session: Session) -> Response:
    did = str(request.path_params["definition_id"])
    a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
    if not a or not b or len(a) > 128 or len(b) > 128:
        raise ValidationError("pick two versions", [
            Problem("$.a", "required", "choose the two versions to compare")])

    def _read() -> tuple[Any, Any, list[Any]]:
        return (get_definition(engine.db, session.namespace, did, a),
                get_definition(engine.db, session.namespace, did, b),
                list_versions(engine.db, session.namespace, did))

    left, right, versions = await run_in_threadpool(_read)
    lines = list(difflib.unified_diff(
        pretty(left.document).splitlines(), pretty(right.document).splitlines(),
        fromfile=f"version {left.version}", tofile=f"version {right.version}", lineterm=""))
    rows = [("add" if line.startswith("+") and not line.startswith("+++") else
             "del" if line.startswith("-") and not line.startswith("---") else
             "hunk" if line.startswith("@@") else "ctx", line) for line in lines]
    return page("diff.html", session=session, nav="definitions", did=did, left=left,
                right=right, rows=rows, versions=[v.version for v in versions])


async def queues(request: Request, engine: Engine, session: Session) -> Response:
    found, quota = await run_in_threadpool(queues_of, engine.db, session.namespace)
    return page("queues.html", session=session, nav="queues", queues=found, quota=quota)


__all__ = ["definition", "definitions", "diff", "queues", "version"]
