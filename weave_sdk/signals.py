"""Signals from the SDK: ``POST .../workflows/{id}/signals`` and the signal list.

``send_signal(client, workflow_id, name, correlation_key=..., payload=...)`` is what
``WorkflowHandle.signal(...)`` calls. The ``signal_id`` is the idempotency key: pass the same
one on every retry of one business signal (the default is a fresh random id, fine for a
single call that is not retried). The server answers 202 for a new acceptance and 200 with
the original acceptance for a replay; both return a :class:`SignalAcceptance`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from weave_sdk._answers import _expect
from weave_sdk._calls import _Call, _segment
from weave_sdk.exactjson import dumps

if TYPE_CHECKING:
    from weave_sdk.client import AsyncClient, Client


@dataclass(frozen=True)
class SignalAcceptance:
    """One signal as the server stored it. Accepted (durably saved) and consumed are
    separate: ``state`` is ``ACCEPTED`` until a wait consumes it (``CONSUMED``, with
    ``consumed_by_activation_id``), or ``LOST`` / ``EXPIRED`` (``reason`` says why)."""

    signal_id: str
    workflow_id: str
    name: str
    correlation_key: str
    param_version: str
    payload: Any
    evidence: Any
    state: str
    accepted_by: str
    accepted_at: str
    expires_at: str
    target_activation_id: str | None
    consumed_by_activation_id: str | None
    settled_at: str | None
    reason: str | None
    created: bool = False
    """True when this call accepted it (202); False for a replay of the same id (200)."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any], created: bool = False) -> SignalAcceptance:
        values: dict[str, Any] = {k: data.get(k) for k in (
            "signal_id", "workflow_id", "name", "correlation_key", "param_version", "payload",
            "evidence", "state", "accepted_by", "accepted_at", "expires_at",
            "target_activation_id", "consumed_by_activation_id", "settled_at", "reason")}
        return cls(**values, created=created)


def _accepted(response: httpx.Response) -> SignalAcceptance:
    body = _expect(response, 200, 202)
    return SignalAcceptance.from_json(body, created=response.status_code == 202)


def _listed(response: httpx.Response) -> list[SignalAcceptance]:
    body = _expect(response, 200)
    return [SignalAcceptance.from_json(item) for item in body.get("items", [])]


def signal_call(namespace_path: str, workflow_id: str, name: str, *, correlation_key: str,
                payload: Any = None, signal_id: str | None = None, param_version: str = "1",
                evidence: Sequence[Any] = ()) -> _Call[SignalAcceptance]:
    body = {"signal_id": signal_id or f"sig-{uuid.uuid4().hex}", "name": name,
            "correlation_key": correlation_key, "param_version": param_version,
            "payload": payload, "evidence": list(evidence)}
    path = f"{namespace_path}/workflows/{_segment(workflow_id, 'workflow_id')}/signals"
    return _Call("POST", path, _accepted, dumps(body).encode("utf-8"))


def send_signal(client: Client, workflow_id: str, name: str, *, correlation_key: str,
                payload: Any = None, signal_id: str | None = None, param_version: str = "1",
                evidence: Sequence[Any] = ()) -> SignalAcceptance:
    """Deliver one signal (blocking). Raises ``WeaveAPIError`` with the server's code:
    ``not_found``, ``signal_conflict``, ``workflow_settled``, ``signal_payload_too_large``,
    ``signal_backlog_full``, ``validation_failed``."""
    return client._run(signal_call(
        client._settings.ns_path(""), workflow_id, name, correlation_key=correlation_key,
        payload=payload, signal_id=signal_id, param_version=param_version, evidence=evidence))


async def send_signal_async(client: AsyncClient, workflow_id: str, name: str, *,
                            correlation_key: str, payload: Any = None,
                            signal_id: str | None = None, param_version: str = "1",
                            evidence: Sequence[Any] = ()) -> SignalAcceptance:
    """:func:`send_signal` for the ``AsyncClient``."""
    return await client._run(signal_call(
        client._settings.ns_path(""), workflow_id, name, correlation_key=correlation_key,
        payload=payload, signal_id=signal_id, param_version=param_version, evidence=evidence))


def list_signals(client: Client, workflow_id: str) -> list[SignalAcceptance]:
    """The instance's signals in acceptance order."""
    path = f"{client._settings.ns_path('')}/workflows/{_segment(workflow_id, 'workflow_id')}"
    return client._run(_Call("GET", path + "/signals", _listed))


__all__ = ["SignalAcceptance", "list_signals", "send_signal", "send_signal_async"]
