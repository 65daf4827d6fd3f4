"""The effective configuration is frozen when an instance is accepted (issue 12 item 4;
seed 003 §3, R-3.1, R-11.3): start, change the default or the limit, continue — the old
value holds. Through the HTTP app and the SDK, on MariaDB and SQLite."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy as sa

from tests.http.conftest import Tenant, client_for, new_tenant
from tests.runtime.conftest import make_engine
from tests.runtime.helpers import definition, publish, report, task, tasks_of, work
from weave_core.access.identity import Permission
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_core.runtime.frozen import parse
from weave_core.storage.db import Database
from weave_core.storage.schema import weave_instance_configs, weave_instances
from weave_sdk import Client, WeaveAPIError


@contextmanager
def _sdk(engine: Engine, tenant: Tenant) -> Iterator[Client]:
    http = client_for(engine)
    token = tenant.token(Permission.START, Permission.READ, Permission.SIGNAL)
    with Client("http://testserver", token, tenant.namespace,
                transport=http._transport) as client:
        yield client


def _retrying(step_id: str, attempts: int) -> dict[str, Any]:
    step = task(step_id)
    step["retry"] = {"max_attempts": attempts}
    return step


def _max_attempts(engine: Engine, wid: str, handler: str) -> int:
    (row,) = [t for t in tasks_of(engine, wid) if t.handler == handler]
    return int(row.max_attempts)


def test_a_lowered_limit_never_changes_a_running_instance(
    any_db: Database, plugin_host: PluginHost,
) -> None:
    before = make_engine(any_db, plugin_host)  # max_task_attempts 100
    tenant = new_tenant(any_db)
    ns = tenant.namespace
    publish(before, ns, definition("fz", [task("a"), _retrying("b", 50)]))
    with _sdk(before, tenant) as sdk:
        handle = sdk.start("fz", {})
        config = handle.describe().config
    assert config is not None and config["schema_version"] == 1
    assert config["limits"]["max_task_attempts"] == 100
    assert config["defaults"] == {"failure_policy": "REVIEW",
                                  "deadline_seconds": Limits().max_deadline_seconds,
                                  "lease_seconds": 60}
    # The operator lowers the limit and restarts the engine: the running instance goes on
    # under the limit it was accepted with; a new start sees the new one.
    after = make_engine(any_db, plugin_host, limits=Limits(max_task_attempts=10))
    (a,) = work(after, ns, handlers=["a"])
    report(after, ns, a, {})
    assert _max_attempts(after, handle.workflow_id, "b") == 50
    with _sdk(after, tenant) as sdk:
        view = sdk.get_workflow(handle.workflow_id)
        assert view.status == "RUNNING" and view.step("b").phase == "ACTIVE"
        assert view.config == config  # what it was accepted with, read through the new engine
        with pytest.raises(WeaveAPIError) as refused:
            sdk.start("fz", {})
        assert refused.value.status == 422
    (b,) = work(after, ns, handlers=["b"])
    report(after, ns, b, {})
    with _sdk(after, tenant) as sdk:
        assert sdk.get_workflow(handle.workflow_id).status == "SUCCEEDED"


def test_a_changed_default_never_changes_a_running_instance(
    any_db: Database, plugin_host: PluginHost,
) -> None:
    """The retry policy a step leaves out comes from the kind's default; the value resolved
    at start is the one its task gets later, whatever the default is by then."""
    engine = make_engine(any_db, plugin_host)
    tenant = new_tenant(any_db)
    ns = tenant.namespace
    publish(engine, ns, definition("fd", [task("a"), task("b")]))
    with _sdk(engine, tenant) as sdk:
        old = sdk.start("fd", {})
        frozen = old.describe().config
    assert frozen is not None
    assert frozen["steps"]["b"]["retry"]["max_attempts"] == 3  # today's default, resolved
    # This instance was accepted by an engine whose default was 7 attempts (its stored
    # configuration says so); the engine's default is 3 now.
    assert frozen["defaults"]["lease_seconds"] == 60  # the dispatch layer's default lease
    frozen["steps"]["b"]["retry"]["max_attempts"] = 7
    frozen["defaults"]["lease_seconds"] = 90
    text = exactjson.dumps(frozen)
    key = parse(text, engine.limits).key

    def _older(conn: Any) -> None:
        conn.execute(sa.insert(weave_instance_configs),
                     {"config_hash": key, "config": text, "created_at": engine.db.now(conn)})
        i = weave_instances
        conn.execute(sa.update(i).where(i.c.instance_id == old.workflow_id)
                     .values(config_hash=key))

    engine.db.transaction(_older, name="test_older_engine")
    restarted = make_engine(any_db, plugin_host)  # a fresh process: nothing cached
    (a,) = work(restarted, ns, handlers=["a"])
    report(restarted, ns, a, {})
    assert _max_attempts(restarted, old.workflow_id, "b") == 7  # the old value holds
    (b,) = work(restarted, ns, handlers=["b"])
    assert b.heartbeat_timeout == 90  # and so does the lease length it was accepted with
    with _sdk(restarted, tenant) as sdk:
        fresh = sdk.start("fd", {})
        view = sdk.get_workflow(old.workflow_id)
        assert view.config is not None
        assert view.config["steps"]["b"]["retry"]["max_attempts"] == 7
    (a2,) = work(restarted, ns, handlers=["a"])
    report(restarted, ns, a2, {})
    assert _max_attempts(restarted, fresh.workflow_id, "b") == 3  # a new instance: today's
    (b2,) = work(restarted, ns, handlers=["b"])
    assert b2.heartbeat_timeout == 60


def test_signal_limits_are_the_instance_s(any_db: Database, plugin_host: PluginHost) -> None:
    """The backlog limit an instance checks when it accepts signals is the one of its start."""
    from tests.waits.helpers import signal_step

    before = make_engine(any_db, plugin_host)
    tenant = new_tenant(any_db)
    ns = tenant.namespace
    publish(before, ns, definition("fs", [task("a"), signal_step("approval")]))
    with _sdk(before, tenant) as sdk:
        wid = sdk.start("fs", {"job": "job-1"}).workflow_id
    after = make_engine(any_db, plugin_host, limits=Limits(max_unmatched_signals=1))
    with _sdk(after, tenant) as sdk:
        handle = sdk.get_workflow_handle(wid)
        for n in range(3):  # early signals: no wait is open yet
            handle.signal("approval", correlation_key="job-1", payload={"n": n},
                          signal_id=f"s-{n}")
        assert len(sdk.get_workflow(wid).signals) == 3
        fresh = sdk.start("fs", {"job": "job-2"}).workflow_id
        later = sdk.get_workflow_handle(fresh)
        later.signal("approval", correlation_key="job-2", payload={"n": 0}, signal_id="t-0")
        with pytest.raises(WeaveAPIError) as full:
            later.signal("approval", correlation_key="job-2", payload={"n": 1},
                         signal_id="t-1")
        assert full.value.code == "signal_backlog_full"


def test_a_signal_is_checked_against_the_instance_s_own_program(
    any_db: Database, plugin_host: PluginHost
) -> None:
    """The declared-signal check reads the instance's program under its frozen limits: an
    engine whose limits its definition no longer meets still takes the declared signal
    (and still refuses an undeclared one)."""
    from tests.waits.helpers import signal_step

    before = make_engine(any_db, plugin_host)
    tenant = new_tenant(any_db)
    publish(before, tenant.namespace,
            definition("fd", [task("a"), task("b"), signal_step("approval")]))
    with _sdk(before, tenant) as sdk:
        wid = sdk.start("fd", {"job": "job-1"}).workflow_id
    after = make_engine(any_db, plugin_host, limits=Limits(max_steps=2))  # 3 steps: too many
    with _sdk(after, tenant) as sdk:
        handle = sdk.get_workflow_handle(wid)
        handle.signal("approval", correlation_key="job-1", payload={}, signal_id="ok-1")
        assert [s.name for s in sdk.get_workflow(wid).signals] == ["approval"]
        with pytest.raises(WeaveAPIError) as refused:
            handle.signal("nobody-waits", correlation_key="job-1", payload={},
                          signal_id="no-1")
        assert refused.value.code == "signal_not_declared"
