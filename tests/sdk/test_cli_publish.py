"""``weave publish``: loading TARGET and printing outcomes (unit tests with a stub transport;
``test_client_live.py`` runs the command against the real server)."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.sdk.design_example import DESIGN_EXAMPLE_JSON, build_external_job
from weave_http.cli import build_parser
from weave_http.cli.publish import TargetError, load_target, publish_target
from weave_sdk import Client, Workflow, dumps, loads


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("wf_mod")]:
        del sys.modules[name]


def test_json_file_target(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(DESIGN_EXAMPLE_JSON)
    assert load_target(str(path)) == loads(DESIGN_EXAMPLE_JSON)


def test_module_targets(module_dir: Path) -> None:
    (module_dir / "wf_mod.py").write_text(
        "from tests.sdk.design_example import build_external_job\n"
        "external_job = build_external_job()\n"
        "class Holder:\n    document = {'schema_version': 1}\n"
        "number = 3\n"
    )
    workflow = load_target("wf_mod:external_job")
    assert isinstance(workflow, Workflow) and workflow == build_external_job()
    assert load_target("wf_mod:Holder.document") == {"schema_version": 1}
    with pytest.raises(TargetError, match="not a Workflow or a dict"):
        load_target("wf_mod:number")
    with pytest.raises(TargetError, match="no attribute"):
        load_target("wf_mod:missing")


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("nowhere.json", "cannot read"),
        ("wf_mod_missing:x", "cannot import"),
        ("plain", "neither a .json file nor module:attribute"),
    ],
)
def test_bad_targets(module_dir: Path, target: str, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        load_target(target)


def test_invalid_json_file(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text('{"a": 1, "a": 2}')
    with pytest.raises(TargetError, match="duplicate key"):
        load_target(str(path))


def run(target: str, status: int, body: Any) -> tuple[int, str, str]:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=dumps(body))

    out, err = io.StringIO(), io.StringIO()
    client = Client("http://weave.test", "t", "ns", transport=httpx.MockTransport(handler))
    with client:
        code = publish_target(target, client, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def definition_file(tmp_path: Path) -> str:
    path = tmp_path / "d.json"
    path.write_text(DESIGN_EXAMPLE_JSON)
    return str(path)


def published(created: bool) -> dict[str, Any]:
    return {
        "definition_id": "external-job",
        "version": "1",
        "content_hash": "0123456789abcdef" * 4,
        "published_at": "2025-01-01T00:00:00Z",
        "created": created,
        "document": loads(DESIGN_EXAMPLE_JSON),
    }


def test_unit_outcomes_are_printed(definition_file: str) -> None:
    assert run(definition_file, 201, published(True)) == (
        0,
        "created: external-job version 1 (content 0123456789ab)\n",
        "",
    )
    code, out, _ = run(definition_file, 200, published(False))
    assert (code, out.split(":")[0]) == (0, "unchanged")


def test_unit_conflict_and_refusal_print_the_code(definition_file: str) -> None:
    conflict = {"code": "definition_version_conflict", "detail": "other content", "status": 409}
    assert run(definition_file, 409, conflict) == (
        1,
        "",
        "error[definition_version_conflict]: other content\n",
    )
    refused = {
        "code": "validation_failed",
        "detail": "1 problem",
        "problems": [{"path": "$.steps[0].id", "code": "invalid_id", "message": "bad"}],
    }
    code, _, err = run(definition_file, 422, refused)
    assert code == 1
    assert err.splitlines() == [
        "error[validation_failed]: 1 problem",
        "  $.steps[0].id: invalid_id: bad",
    ]


def test_unit_bad_target_is_reported() -> None:
    code, _, err = run("missing.json", 201, {})
    assert code == 1 and err.startswith("error[bad_target]: cannot read missing.json")


def test_parser_registers_publish() -> None:
    args = build_parser().parse_args(
        ["publish", "x.json", "--url", "http://u", "--token", "t", "--namespace", "n"]
    )
    assert (args.target, args.url, args.token, args.namespace) == ("x.json", "http://u", "t", "n")
    assert callable(args.func)


def test_missing_url_is_an_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("WEAVE_URL", raising=False)
    args = build_parser().parse_args(["publish", "x.json"])
    assert args.func(args) == 1
    assert capsys.readouterr().err.startswith("error[bad_configuration]: no server URL")
