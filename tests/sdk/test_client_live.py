"""The SDK clients and ``weave publish`` against the real server.

Every test takes the fixture ``weave_server``, an object with ``base_url``, ``token`` and
``namespace`` attributes: a running ``weave serve`` on a migrated database and a token of
that namespace with at least the ``publish`` and ``read`` permissions. The fixture lives in
the shared conftest; nothing here is skipped.
"""

from __future__ import annotations

import asyncio
import secrets
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

import pytest

from tests.sdk.design_example import DESIGN_EXAMPLE_JSON
from tests.sdk.test_docs_examples import run_blocks
from tests.sdk.test_validate import CASES
from weave_sdk import (
    PROBLEM_CODES,
    AsyncClient,
    AuthenticationError,
    Client,
    ConflictError,
    NotFoundError,
    ValidationError,
    Workflow,
    dumps,
    loads,
    validate,
)


class Server(Protocol):
    base_url: str
    token: str
    namespace: str


def client_for(server: Server, **overrides: Any) -> Client:
    options = {
        "base_url": server.base_url,
        "token": server.token,
        "namespace": server.namespace,
        **overrides,
    }
    return Client(**options)


def fresh_example(**changes: Any) -> dict[str, Any]:
    """The DESIGN.md example under a definition id no other test uses."""
    document: dict[str, Any] = loads(DESIGN_EXAMPLE_JSON)
    document["definition_id"] = f"external-job-{secrets.token_hex(4)}"
    document.update(changes)
    return document


def test_live_health(weave_server: Server) -> None:
    with client_for(weave_server) as client:
        assert client.health().ok is True


def test_live_publish_is_idempotent_and_readable(weave_server: Server) -> None:
    document = fresh_example()
    definition_id = document["definition_id"]
    with client_for(weave_server) as client:
        first = client.publish(Workflow.from_json(document))
        again = client.publish(document)
        assert (first.created, again.created) == (True, False)
        assert first.content_hash == again.content_hash
        assert (first.definition_id, first.version) == (definition_id, "1")
        assert again.published_at == first.published_at

        latest = client.get_definition(definition_id)
        exact = client.get_definition(definition_id, "1")
        assert latest == exact
        assert latest.document == document
        assert latest.workflow().to_json() == document

        listed = {d.definition_id: d for d in client.list_definitions()}
        assert listed[definition_id].latest_version == "1"
        assert listed[definition_id].versions == 1
        versions = client.list_versions(definition_id)
        assert [(v.version, v.content_hash) for v in versions] == [("1", first.content_hash)]

        second = client.publish({**document, "version": "2"})
        assert second.created is True
        assert client.get_definition(definition_id).version == "2"


def test_live_conflict(weave_server: Server) -> None:
    document = fresh_example()
    with client_for(weave_server) as client:
        client.publish(document)
        with pytest.raises(ConflictError) as info:
            client.publish({**document, "deadline_seconds": 3600})
    assert info.value.status == 409
    assert info.value.code == "definition_version_conflict"


def test_live_exact_numbers_survive_the_round_trip(weave_server: Server) -> None:
    document = fresh_example()
    schema = document["input_schema"]
    schema["properties"]["amount"]["maximum"] = Decimal("1.10")
    schema["x-big"] = 9007199254740993
    schema["x-tiny"] = Decimal("1E-400")
    with client_for(weave_server) as client:
        client.publish(document)
        stored = client.get_definition(document["definition_id"], "1").document
    stored_schema = stored["input_schema"]
    assert stored_schema["x-big"] == 9007199254740993
    assert isinstance(stored_schema["x-big"], int)
    assert stored_schema["properties"]["amount"]["maximum"] == Decimal("1.1")
    assert stored_schema["x-tiny"] > 0


def test_live_refused_definition_lists_every_problem(weave_server: Server) -> None:
    document = fresh_example()
    document["steps"][0]["id"] = "1bad"
    document["failure_policy"] = "NEVER"
    with client_for(weave_server) as client, pytest.raises(ValidationError) as info:
        client.publish(document)
    found = {(p.path, p.code) for p in info.value.problems}
    assert {("$.steps[0].id", "invalid_id"), ("$.failure_policy", "invalid_field")} <= found


@pytest.mark.parametrize(
    ("document", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_live_server_and_local_validation_agree(
    weave_server: Server, document: dict[str, Any], expected: set[tuple[str, str]]
) -> None:
    local = {(p.path, p.code) for p in validate(document)}
    assert local == expected
    with client_for(weave_server) as client, pytest.raises(ValidationError) as info:
        client.publish(document)
    server = {(p.path, p.code) for p in info.value.problems if p.code in PROBLEM_CODES}
    assert server == local


def test_live_errors(weave_server: Server) -> None:
    with client_for(weave_server) as client, pytest.raises(NotFoundError):
        client.get_definition(f"missing-{secrets.token_hex(4)}")
    with client_for(weave_server, token="not-a-token") as client:
        with pytest.raises(AuthenticationError) as info:
            client.list_definitions()
    assert info.value.status == 401
    other = f"ns-other-{secrets.token_hex(4)}"
    with client_for(weave_server, namespace=other) as client, pytest.raises(NotFoundError):
        client.list_definitions()


def test_live_async_client(weave_server: Server) -> None:
    document = fresh_example()

    async def scenario() -> None:
        async with AsyncClient(
            weave_server.base_url, weave_server.token, weave_server.namespace
        ) as client:
            assert (await client.health()).ok
            published = await client.publish(document)
            assert published.created
            read = await client.get_definition(document["definition_id"])
            assert read.document == document

    asyncio.run(scenario())


def test_live_cli_publish(
    weave_server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from weave_http.cli import main

    document = fresh_example()
    path = tmp_path / "definition.json"
    path.write_text(dumps(document))
    options = [
        "--url",
        weave_server.base_url,
        "--token",
        weave_server.token,
        "--namespace",
        weave_server.namespace,
    ]
    assert main(["publish", str(path), *options]) == 0
    assert capsys.readouterr().out.startswith("created: ")
    assert main(["publish", str(path), *options]) == 0
    assert capsys.readouterr().out.startswith("unchanged: ")
    path.write_text(dumps({**document, "deadline_seconds": 60}))
    assert main(["publish", str(path), *options]) == 1
    assert capsys.readouterr().err.startswith("error[definition_version_conflict]: ")


def test_live_docs_examples(weave_server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEAVE_URL", weave_server.base_url)
    monkeypatch.setenv("WEAVE_TOKEN", weave_server.token)
    monkeypatch.setenv("WEAVE_NAMESPACE", weave_server.namespace)
    run_blocks(live=True, definition_id=f"external-job-{secrets.token_hex(4)}")
