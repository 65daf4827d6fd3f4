"""The health check's answer."""

from __future__ import annotations

from typing import Literal

from weave_http.models.base import ApiModel


class HealthResponse(ApiModel):
    """The server is up and its database answers."""

    status: Literal["ok"] = "ok"
    database: Literal["reachable"] = "reachable"
    dialect: Literal["mysql", "sqlite"]
    node_id: str
    version: str


__all__ = [
    "HealthResponse",
]
