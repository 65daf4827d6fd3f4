"""Publishing and reading definitions on MariaDB and SQLite: idempotency, conflicts, audit."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from weave_core.access.audit import list_audit
from weave_core.access.identity import Permission, Principal, create_namespace
from weave_core.definitions.store import (
    AUDIT_ACTION,
    get_definition,
    list_definitions,
    list_versions,
    object_id,
    publish_definition,
)
from weave_core.foundation import exactjson
from weave_core.foundation.errors import DefinitionConflictError, NotFoundError, ValidationError
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_core.storage.db import Database


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost.from_entry_points()


def principal(ns: str) -> Principal:
    return Principal(token_id="tok1", namespace=ns, permissions=frozenset({Permission.PUBLISH}))


def doc(definition_id: str = "job", version: str = "1", deadline: int = 3600) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "definition_id": definition_id,
        "version": version,
        "deadline_seconds": deadline,
        "steps": [
            {
                "id": "a",
                "kind": "task",
                "queue": "q",
                "handler": {"name": "h", "version": "1"},
                "input": {"amount": exactjson.loads("1.10")},
            },
        ],
    }


def audit_rows(db: Database, ns: str, definition_id: str, version: str) -> list[Any]:
    return db.read(
        lambda conn: list_audit(conn, ns, "definition", object_id(definition_id, version))
    )


def test_publish_is_idempotent_and_conflicts_on_other_content(
    any_db: Database, ns_name: str, host: PluginHost
) -> None:
    create_namespace(any_db, ns_name)
    who = principal(ns_name)
    first = publish_definition(any_db, host, Limits(), who, ns_name, doc())
    assert first.created
    assert first.record.version == "1" and first.record.published_by == "token:tok1"
    assert first.record.document["steps"][0]["input"]["amount"] == exactjson.loads("1.1")

    # same content, other key order and number spelling: idempotent, no new audit row
    again = exactjson.loads(exactjson.dumps(doc()).replace("1.1", "1.100"))
    second = publish_definition(any_db, host, Limits(), who, ns_name, again)
    assert not second.created
    assert second.record == first.record

    with pytest.raises(DefinitionConflictError) as caught:
        publish_definition(any_db, host, Limits(), who, ns_name, doc(deadline=7200))
    assert caught.value.details["existing_content_hash"] == first.record.content_hash
    assert caught.value.code == "definition_version_conflict"

    rows = audit_rows(any_db, ns_name, "job", "1")
    assert [(r.action, r.actor) for r in rows] == [(AUDIT_ACTION, "token:tok1")]
    assert rows[0].metadata["content_hash"] == first.record.content_hash


def test_reads(any_db: Database, ns_name: str, host: PluginHost) -> None:
    create_namespace(any_db, ns_name)
    who = principal(ns_name)
    for definition_id, version in [("job", "1"), ("job", "2"), ("other", "a")]:
        publish_definition(any_db, host, Limits(), who, ns_name, doc(definition_id, version))
    assert get_definition(any_db, ns_name, "job").version == "2"
    assert get_definition(any_db, ns_name, "job", "1").version == "1"
    assert [r.version for r in list_versions(any_db, ns_name, "job")] == ["1", "2"]
    assert [(r.definition_id, r.version) for r in list_definitions(any_db, ns_name)] == [
        ("job", "2"),
        ("other", "a"),
    ]
    with pytest.raises(NotFoundError):
        get_definition(any_db, ns_name, "job", "3")
    with pytest.raises(NotFoundError):
        get_definition(any_db, ns_name, "missing")
    with pytest.raises(NotFoundError):
        list_versions(any_db, ns_name, "missing")
    # namespaces isolate: another namespace sees nothing
    assert list_definitions(any_db, ns_name + "-other") == []
    with pytest.raises(NotFoundError):
        get_definition(any_db, ns_name + "-other", "job")


def test_invalid_documents_and_unknown_namespaces_store_nothing(
    any_db: Database, ns_name: str, host: PluginHost
) -> None:
    with pytest.raises(NotFoundError):
        publish_definition(any_db, host, Limits(), principal(ns_name), ns_name, doc())
    create_namespace(any_db, ns_name)
    with pytest.raises(NotFoundError):  # a principal of another namespace
        publish_definition(any_db, host, Limits(), principal("elsewhere"), ns_name, doc())
    bad = doc()
    bad["steps"][0]["kind"] = "teleport"
    with pytest.raises(ValidationError):
        publish_definition(any_db, host, Limits(), principal(ns_name), ns_name, bad)
    assert list_definitions(any_db, ns_name) == []
    assert audit_rows(any_db, ns_name, "job", "1") == []


def test_a_third_party_kind_is_accepted_at_publish(
    any_db: Database, ns_name: str, host: PluginHost
) -> None:
    create_namespace(any_db, ns_name)
    document = {
        "schema_version": 1,
        "definition_id": "ask",
        "version": "1",
        "steps": [
            {"id": "ask", "kind": "approval_email", "to": "boss@example.com", "subject": "Approve"}
        ],
    }
    result = publish_definition(any_db, host, Limits(), principal(ns_name), ns_name, document)
    assert result.created and result.record.document["steps"][0]["kind"] == "approval_email"


def _race(db: Database, host: PluginHost, ns: str, documents: list[dict[str, Any]]) -> list[Any]:
    barrier = threading.Barrier(len(documents))
    outcomes: list[Any] = [None] * len(documents)

    def publish(index: int) -> None:
        barrier.wait()
        try:
            outcomes[index] = publish_definition(
                db, host, Limits(), principal(ns), ns, documents[index]
            )
        except Exception as exc:  # collected and asserted by the test
            outcomes[index] = exc

    threads = [threading.Thread(target=publish, args=(i,)) for i in range(len(documents))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes


@pytest.mark.mysql
def test_concurrent_publishes_of_different_content_one_wins(
    mysql_db: Database, ns_name: str, host: PluginHost
) -> None:
    create_namespace(mysql_db, ns_name)
    outcomes = _race(mysql_db, host, ns_name, [doc(deadline=100 + i) for i in range(8)])
    winners = [o for o in outcomes if not isinstance(o, Exception)]
    losers = [o for o in outcomes if isinstance(o, Exception)]
    assert len(winners) == 1 and winners[0].created, outcomes
    assert len(losers) == 7 and all(isinstance(o, DefinitionConflictError) for o in losers)
    stored = get_definition(mysql_db, ns_name, "job", "1")
    assert stored.content_hash == winners[0].record.content_hash
    assert len(audit_rows(mysql_db, ns_name, "job", "1")) == 1


@pytest.mark.mysql
def test_concurrent_publishes_of_the_same_content_create_once(
    mysql_db: Database, ns_name: str, host: PluginHost
) -> None:
    create_namespace(mysql_db, ns_name)
    outcomes = _race(mysql_db, host, ns_name, [doc() for _ in range(8)])
    assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
    assert sum(o.created for o in outcomes) == 1
    assert len({o.record.content_hash for o in outcomes}) == 1
    assert len(audit_rows(mysql_db, ns_name, "job", "1")) == 1
