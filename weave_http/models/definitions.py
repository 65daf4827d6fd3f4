"""Definitions on the wire: the document published, its versions and lists."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from weave_http.models.base import ApiModel, JsonObject, UtcDatetime


class DefinitionDocument(BaseModel):
    """A definition document, schema_version 1 (see docs/definitions.md).

    Only the envelope is described here; the server validates the whole document on
    publish and reports every problem at once (422).
    """

    model_config = ConfigDict(extra="allow", title="DefinitionDocument")

    schema_version: Literal[1]
    definition_id: str
    version: str
    steps: list[JsonObject]


class DefinitionVersion(ApiModel):
    """One published, immutable version with its canonical document."""

    definition_id: str
    version: str
    content_hash: str = Field(description="SHA-256 (hex) of the canonical document")
    published_at: UtcDatetime
    document: JsonObject


class PublishResponse(ApiModel):
    """The outcome of a publish: ``created`` is false for an identical re-publish (200)."""

    definition_id: str
    version: str
    content_hash: str
    published_at: UtcDatetime
    created: bool
    document: JsonObject


class DefinitionSummary(ApiModel):
    definition_id: str
    latest_version: str
    versions: int = Field(description="how many versions are published")


class DefinitionList(ApiModel):
    items: list[DefinitionSummary]


class VersionSummary(ApiModel):
    version: str
    content_hash: str
    published_at: UtcDatetime


class DefinitionVersions(ApiModel):
    """Every version of one definition, oldest first."""

    definition_id: str
    latest_version: str
    items: list[VersionSummary]


__all__ = [
    "DefinitionDocument",
    "DefinitionList",
    "DefinitionSummary",
    "DefinitionVersion",
    "DefinitionVersions",
    "PublishResponse",
    "VersionSummary",
]
