"""Disabling a namespace (#12 item 9, R-6.6): ``weave namespace disable NS`` makes its tokens
401 within a second; a result already saved is still consumed but its successor does not
start (saved as pending); ``weave namespace enable NS`` lets the instance continue from
the records. Over HTTP, the SDK and the CLI, on MariaDB and SQLite."""

from __future__ import annotations

import time

import pytest

from tests.http.conftest import Tenant, client_for
from tests.runtime.conftest import make_engine
from tests.runtime.helpers import (
    definition,
    pending_of,
    publish,
    report,
    run_worker,
    start,
    steps,
    task,
    tasks_of,
    work,
)
from weave_core.access.identity import create_namespace
from weave_core.plugins.host import PluginHost
from weave_core.runtime import run_tick
from weave_core.runtime.namespaces import namespace_disabled
from weave_core.storage.db import Database
from weave_core.storage.schema import weave_audit
from weave_http.cli import main
from weave_sdk import Client
from weave_sdk.errors import AuthenticationError

TOKEN_CACHE_S = 1.1  # an engine process trusts a checked token for one second


@pytest.mark.parametrize("backend", ["mysql", "sqlite"])
def test_disable_refuses_tokens_saves_in_flight_work_and_enable_continues(
    request: pytest.FixtureRequest, plugin_host: PluginHost, backend: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url: str = request.getfixturevalue(f"{backend}_url")
    db: Database = request.getfixturevalue(f"{backend}_db")
    engine = make_engine(db, plugin_host)
    tenant = Tenant(db, f"dis-{time.monotonic_ns() % 10**9}")
    create_namespace(db, tenant.namespace)
    ns = tenant.namespace
    publish(engine, ns, definition("two", [task("a"), task("b")]))
    wid = start(engine, ns, "two", {}).instance.instance_id
    (claimed,) = work(engine, ns, handlers=["a"])
    report(engine, ns, claimed, {"x": 1}, consume=False)  # saved, not yet consumed

    http = client_for(engine)
    read = tenant.headers("read")
    path = f"/v1/namespaces/{ns}/workflows/{wid}"
    assert http.get(path, headers=read).status_code == 200  # the token is now cached

    assert main(["namespace", "disable", ns, "--database-url", url]) == 0
    assert "disabled" in capsys.readouterr().out
    assert namespace_disabled(db, ns)
    time.sleep(TOKEN_CACHE_S)
    refused = http.get(path, headers=read)
    assert refused.status_code == 401 and refused.json()["code"] == "unauthenticated"
    started = http.post(f"/v1/namespaces/{ns}/workflows", headers=tenant.headers("start"),
                        json={"definition_id": "two", "input": {}, "idempotency_key": "k"})
    assert started.status_code == 401
    with Client("http://testserver", tenant.token("read"), ns,
                transport=http._transport) as sdk, pytest.raises(AuthenticationError):
        sdk.get_workflow(wid)

    run_tick(engine)  # the saved result is consumed; its successor does not start
    assert steps(engine, wid)["a"].phase == "SUCCEEDED"
    assert "b" not in steps(engine, wid)
    assert [t.handler for t in tasks_of(engine, wid)] == ["a"]
    blocked = [p for p in pending_of(engine, wid)
               if p.state == "PENDING" and p.kind == "ROOT" and p.ref == ""]
    assert [p.reason for p in blocked] == ["namespace_disabled"]

    assert main(["namespace", "enable", ns, "--database-url", url]) == 0
    assert "1 blocked instance(s) continue" in capsys.readouterr().out
    assert not namespace_disabled(db, ns)
    run_tick(engine)
    assert run_worker(engine, ns, {"b": {"y": 2}}) == ["b"]
    assert http.get(path, headers=read).json()["status"] == "SUCCEEDED"
    actions = [r.action for r in db.read(lambda conn: conn.execute(
        weave_audit.select().where(weave_audit.c.namespace == ns,
                                   weave_audit.c.object_type == "namespace")).all())]
    assert actions == ["namespace.create", "namespace.disable", "namespace.enable"]


def test_unknown_namespace_is_an_error_line(mysql_url: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["namespace", "disable", "no-such-ns", "--database-url", mysql_url]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error[not_found]: ") and len(err.strip().splitlines()) == 1
