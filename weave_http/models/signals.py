"""Signals on the wire: sending one, and the signals of an instance."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from weave_http.models.base import AnyJson, ApiModel


class SignalRequest(ApiModel):
    """Deliver a signal to one instance (idempotent on ``signal_id`` in the namespace)."""

    signal_id: str = Field(min_length=1, max_length=128,
                           description="stable id chosen by the sender; a retry reuses it")
    name: str = Field(min_length=1, max_length=128)
    correlation_key: str = Field(min_length=1, max_length=256,
                                 description="the business operation this signal is about")
    param_version: str = Field(default="1", min_length=1, max_length=128)
    payload: AnyJson = None
    evidence: list[AnyJson] = Field(default_factory=list, max_length=32,
                                    description="evidence references (ids, URLs, objects)")


class SignalModel(ApiModel):
    """One signal: accepted (durably saved) and consumed are reported separately."""

    signal_id: str
    workflow_id: str
    name: str
    correlation_key: str
    param_version: str
    payload: AnyJson
    evidence: AnyJson
    state: Literal["ACCEPTED", "CONSUMED", "LOST", "EXPIRED"]
    accepted_by: str
    accepted_at: str
    expires_at: str
    target_activation_id: str | None
    consumed_by_activation_id: str | None
    settled_at: str | None
    reason: str | None


class SignalList(ApiModel):
    """The signals of one instance, in acceptance order."""

    items: list[SignalModel]


__all__ = [
    "SignalList",
    "SignalModel",
    "SignalRequest",
]
