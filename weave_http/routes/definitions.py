"""Definition routes (DESIGN.md §10): publish, list, one definition's versions, one version.

Every database call runs in the thread pool, so the event loop never waits on the database.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from weave_core.access.identity import Permission
from weave_core.definitions.store import (
    count_definitions,
    get_definition,
    list_versions,
    publish_definition,
)
from weave_core.foundation.errors import NotFoundError
from weave_core.storage.db import Database
from weave_http.body import read_json, require_object
from weave_http.models import (
    DefinitionDocument,
    DefinitionList,
    DefinitionSummary,
    DefinitionVersion,
    DefinitionVersions,
    PublishResponse,
    VersionSummary,
    json_response,
)
from weave_http.routes import ApiRoute, Context

DEFINITIONS = "/v1/namespaces/{ns}/definitions"
DEFINITION = DEFINITIONS + "/{definition_id}"
VERSION = DEFINITION + "/versions/{version}"


async def publish(request: Request, ctx: Context) -> Response:
    principal, namespace = ctx.require_principal()
    engine = ctx.engine
    document = require_object(await read_json(request, engine.limits), "a definition")
    result = await run_in_threadpool(
        publish_definition, engine.db, engine.plugins, engine.limits, principal, namespace,
        document,
    )
    record = result.record
    body = PublishResponse(
        definition_id=record.definition_id,
        version=record.version,
        content_hash=record.content_hash,
        published_at=record.published_at,
        created=result.created,
        document=record.document,
    )
    return json_response(body, 201 if result.created else 200)


def _summaries(db: Database, namespace: str) -> list[DefinitionSummary]:
    return [
        DefinitionSummary(
            definition_id=c.definition_id, latest_version=c.latest_version, versions=c.versions
        )
        for c in count_definitions(db, namespace)
    ]


async def list_all(request: Request, ctx: Context) -> Response:
    _, namespace = ctx.require_principal()
    items = await run_in_threadpool(_summaries, ctx.engine.db, namespace)
    return json_response(DefinitionList(items=items))


async def one_definition(request: Request, ctx: Context) -> Response:
    _, namespace = ctx.require_principal()
    definition_id = str(request.path_params["definition_id"])
    records = await run_in_threadpool(list_versions, ctx.engine.db, namespace, definition_id)
    if not records:
        raise NotFoundError(
            f"no definition {definition_id!r}", details={"definition_id": definition_id}
        )
    return json_response(
        DefinitionVersions(
            definition_id=definition_id,
            latest_version=records[-1].version,
            items=[
                VersionSummary(
                    version=r.version, content_hash=r.content_hash, published_at=r.published_at
                )
                for r in records
            ],
        )
    )


async def one_version(request: Request, ctx: Context) -> Response:
    _, namespace = ctx.require_principal()
    definition_id = str(request.path_params["definition_id"])
    version = str(request.path_params["version"])
    record = await run_in_threadpool(
        get_definition, ctx.engine.db, namespace, definition_id, version
    )
    return json_response(
        DefinitionVersion(
            definition_id=record.definition_id,
            version=record.version,
            content_hash=record.content_hash,
            published_at=record.published_at,
            document=record.document,
        )
    )


API_ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        method="POST",
        path=DEFINITIONS,
        endpoint=publish,
        operation_id="publishDefinition",
        summary="Publish an immutable definition version",
        permission=Permission.PUBLISH,
        request_model=DefinitionDocument,
        responses={
            201: (PublishResponse, "a new version was published"),
            200: (PublishResponse, "the same content was already published (idempotent)"),
        },
        errors=(400, 409, 413, 415, 422),
        tags=("definitions",),
    ),
    ApiRoute(
        method="GET",
        path=DEFINITIONS,
        endpoint=list_all,
        operation_id="listDefinitions",
        summary="List the definitions of a namespace",
        permission=Permission.READ,
        responses={200: (DefinitionList, "every definition with its latest version")},
        tags=("definitions",),
    ),
    ApiRoute(
        method="GET",
        path=DEFINITION,
        endpoint=one_definition,
        operation_id="getDefinition",
        summary="One definition and its versions",
        permission=Permission.READ,
        responses={200: (DefinitionVersions, "the versions, oldest first")},
        tags=("definitions",),
    ),
    ApiRoute(
        method="GET",
        path=VERSION,
        endpoint=one_version,
        operation_id="getDefinitionVersion",
        summary="One version of a definition (or 'latest') with its document",
        permission=Permission.READ,
        responses={200: (DefinitionVersion, "the version and its canonical document")},
        tags=("definitions",),
    ),
)

__all__ = ["API_ROUTES"]
