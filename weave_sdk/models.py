"""Typed results of the definition routes (DESIGN.md §10), as the server returns them.

Documents keep their exact numbers: the client parses response bodies with
``weave_sdk.exactjson.loads`` (``int``/``Decimal``) before these models see them, and the
models never coerce a ``document``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from weave_sdk.definition import Workflow


class _Model(BaseModel):
    # Unknown members are ignored so that a newer server can add fields.
    model_config = ConfigDict(frozen=True, extra="ignore")


class PublishResult(_Model):
    """Outcome of ``publish``.

    :param created: ``True`` when this call stored a new version (HTTP 201); ``False`` when
        identical content was already published under this id and version (HTTP 200).
    :param definition_id: the definition id.
    :param version: the version.
    :param content_hash: SHA-256 of the canonical document, hex.
    :param published_at: when the version was first stored (server time).
    :param document: the stored (canonical) document.
    """

    created: bool
    definition_id: str
    version: str
    content_hash: str
    published_at: datetime
    document: dict[str, Any]


class DefinitionVersion(_Model):
    """One published version of a definition, with its document."""

    definition_id: str
    version: str
    content_hash: str
    published_at: datetime
    document: dict[str, Any]

    def workflow(self) -> Workflow:
        """The document read back into the builder (``Workflow.from_json``)."""
        return Workflow.from_json(self.document)


class DefinitionSummary(_Model):
    """A definition in the namespace listing."""

    definition_id: str
    latest_version: str
    versions: int


class VersionSummary(_Model):
    """A version in a definition's version listing (no document)."""

    version: str
    content_hash: str
    published_at: datetime


class Health(_Model):
    """Answer of ``GET /v1/health``.

    :param ok: ``True`` for HTTP 200, ``False`` for 503 (e.g. database unreachable).
    :param status_code: the HTTP status.
    :param body: the JSON body as sent by the server.
    """

    ok: bool
    status_code: int
    body: dict[str, Any]


__all__ = [
    "DefinitionSummary",
    "DefinitionVersion",
    "Health",
    "PublishResult",
    "VersionSummary",
]
