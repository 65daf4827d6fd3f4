"""Early signals match the definition (#12 item 7): a signal no ``signal`` step or poll
``receipt`` of the pinned version declares (by name and parameter version) is refused with
422 ``signal_not_declared`` and nothing is stored; declared ones, nested or early, are
accepted. Over HTTP and through the SDK, on MariaDB and SQLite."""

from __future__ import annotations

import secrets

import pytest
import sqlalchemy as sa

from tests.http.conftest import Tenant, client_for, new_tenant
from tests.http.helpers import assert_problem
from tests.runtime.conftest import make_engine
from tests.runtime.helpers import definition, publish, task
from tests.waits.helpers import poll_step, signal_step
from weave_core.access.identity import Permission
from weave_core.plugins.host import PluginHost
from weave_core.storage.db import Database
from weave_core.storage.schema import weave_instances, weave_signals, weave_transitions
from weave_sdk import Client
from weave_sdk.errors import ValidationError


def _counts(db: Database, wid: str) -> tuple[int, int, int]:
    def _read(conn: sa.Connection) -> tuple[int, int, int]:
        signals = conn.execute(sa.select(sa.func.count()).select_from(weave_signals)
                               .where(weave_signals.c.instance_id == wid)).scalar_one()
        history = conn.execute(sa.select(sa.func.count()).select_from(weave_transitions)
                               .where(weave_transitions.c.instance_id == wid)).scalar_one()
        revision = conn.execute(sa.select(weave_instances.c.revision)
                                .where(weave_instances.c.instance_id == wid)).scalar_one()
        return int(signals), int(history), int(revision)

    return db.read(_read)


@pytest.mark.parametrize("backend", ["mysql_db", "sqlite_db"])
def test_undeclared_signals_are_refused_and_nothing_is_stored(
    request: pytest.FixtureRequest, plugin_host: PluginHost, backend: str,
) -> None:
    db: Database = request.getfixturevalue(backend)
    engine = make_engine(db, plugin_host)
    tenant: Tenant = new_tenant(db)
    nested = {"id": "both", "kind": "parallel", "branches": {
        "sig": [signal_step("approval", param_version="2")], "poll": [poll_step("outcome")]}}
    publish(engine, tenant.namespace, definition("decl", [task("a"), nested]))
    client = client_for(engine)
    started = client.post(f"/v1/namespaces/{tenant.namespace}/workflows",
                          headers=tenant.headers(Permission.START),
                          json={"definition_id": "decl", "input": {"job": "job-1"},
                                "idempotency_key": secrets.token_hex(6)})
    assert started.status_code == 201, started.text
    wid = started.json()["workflow_id"]
    url = f"/v1/namespaces/{tenant.namespace}/workflows/{wid}/signals"
    headers = tenant.headers(Permission.SIGNAL)
    before = _counts(db, wid)

    for name, version in [("junk", "1"), ("approval", "1"), ("receipt", "2"), ("a", "1")]:
        refused = client.post(url, headers=headers, json={
            "signal_id": f"s-{name}-{version}", "name": name, "correlation_key": "job-1",
            "param_version": version})
        problem = assert_problem(refused, 422, "signal_not_declared")
        assert problem["problems"][0]["path"] == "$.name"
        assert "approval@2" in problem["problems"][0]["message"]
        assert "receipt@1" in problem["problems"][0]["message"]
    assert _counts(db, wid) == before  # no signal, no history, no revision

    # declared ones are accepted early (no wait is open yet: task "a" runs first)
    early = client.post(url, headers=headers, json={
        "signal_id": "s-ok", "name": "approval", "correlation_key": "job-1",
        "param_version": "2"})
    assert early.status_code == 202, early.text
    assert early.json()["target_activation_id"] is None
    receipt = client.post(url, headers=headers, json={
        "signal_id": "s-receipt", "name": "receipt", "correlation_key": "job-1"})
    assert receipt.status_code == 202, receipt.text
    assert _counts(db, wid)[0] == 2

    with Client("http://testserver", tenant.token(Permission.SIGNAL), tenant.namespace,
                transport=client._transport) as sdk:
        with pytest.raises(ValidationError) as raised:
            sdk.get_workflow_handle(wid).signal("junk", correlation_key="job-1")
        assert raised.value.code == "signal_not_declared"
    assert _counts(db, wid)[0] == 2
