"""``GET /v1/health``: liveness and database reachability (no token needed)."""

from __future__ import annotations

import logging
from importlib import metadata

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from weave_core.foundation.errors import StorageError
from weave_http.models import HealthResponse, json_response
from weave_http.routes import ApiRoute, Context

logger = logging.getLogger(__name__)


def server_version() -> str:
    try:
        return metadata.version("weave-engine")
    except metadata.PackageNotFoundError:  # running from a source tree that is not installed
        return "0+unknown"


def _ping(conn: Connection) -> None:
    conn.execute(sa.text("SELECT 1"))


async def health(request: Request, ctx: Context) -> Response:
    db = ctx.engine.db
    try:
        await run_in_threadpool(db.read, _ping, name="health", max_attempts=1)
    except Exception as exc:
        # Any failure to reach the database means "not ready": say so with a 503 problem
        # (StorageError maps there) instead of a 500; the cause goes to the log only.
        logger.warning("health check: database unreachable: %s", exc)
        raise StorageError(
            "the database is unreachable",
            details={"status": "unavailable", "database": "unreachable",
                     "node_id": ctx.engine.node_id},
        ) from exc
    return json_response(
        HealthResponse(dialect=db.dialect, node_id=ctx.engine.node_id, version=server_version())
    )


API_ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        method="GET",
        path="/v1/health",
        endpoint=health,
        operation_id="getHealth",
        summary="Liveness and database reachability",
        permission=None,
        responses={200: (HealthResponse, "the server is up and its database answers")},
        errors=(503,),
        tags=("health",),
    ),
)

__all__ = ["API_ROUTES", "health", "server_version"]
