"""``weave start``, ``weave show`` and ``weave list`` against a real server (MariaDB)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from tests.e2e.conftest import E2E
from tests.e2e.scenarios import task, workflow
from weave_http.cli import main
from weave_sdk import Handler, loads, ref

pytestmark = pytest.mark.mysql


def weave(e2e: E2E, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--url", e2e.base_url, "--token", e2e.token,
                 "--namespace", e2e.namespace])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def published(e2e: E2E) -> E2E:
    wf = workflow("cli-wf", schema={"type": "object", "required": ["amount"],
                                    "properties": {"amount": {"type": "number"}}})
    wf.task("double", queue="e2e", handler=Handler("echo", "1"),
            input={"amount": ref.input("amount")})
    e2e.publish(wf)
    parked = workflow("cli-parked")
    parked.add(task("parked", "noop", queue="nobody-serves-this"))
    e2e.publish(parked)
    return e2e


def test_start_wait_show_and_list(published: E2E, capsys: pytest.CaptureFixture[str],
                                  tmp_path: Path) -> None:
    e2e = published
    with e2e.worker():
        code, out, err = weave(e2e, capsys, "start", "cli-wf", "--input",
                               '{"amount": 1000.10}', "--idempotency-key", "cli-1", "--wait",
                               "--timeout", "60")
    assert code == 0, err
    first, second, third = out.splitlines()  # the id first, then the outcome
    assert first.startswith("started: wf_") and first.endswith(" (cli-wf version 1, RUNNING)")
    wid = first.split()[1]
    assert second == f"SUCCEEDED: {wid} (cli-wf version 1)"
    assert third == "output: {\"amount\":1000.1}"

    # the same key and input: the original instance (exit 0, "existing")
    code, out, _ = weave(e2e, capsys, "start", "cli-wf", "--input", '{"amount": 1000.1}',
                         "--idempotency-key", "cli-1")
    assert code == 0 and out.startswith(f"existing: {wid} ")
    # other input: the conflict, with the server's code
    code, out, err = weave(e2e, capsys, "start", "cli-wf", "--input", '{"amount": 5}',
                           "--idempotency-key", "cli-1")
    assert code == 1 and err.startswith("error[idempotency_conflict]: ")

    # input from a file, JSON output for scripts
    source = tmp_path / "input.json"
    source.write_text('{"amount": 0.1}')
    code, out, _ = weave(e2e, capsys, "start", "cli-parked", "--input", f"@{source}",
                         "--json")
    assert code == 0
    started = loads(out)
    assert started["created"] is True
    assert started["workflow"]["input"] == {"amount": Decimal("0.1")}
    parked_id = started["workflow"]["workflow_id"]

    code, out, _ = weave(e2e, capsys, "show", wid, "--history")
    assert code == 0
    assert f"workflow         {wid}" in out
    assert "status           SUCCEEDED" in out
    assert "double" in out and "echo@1" in out
    assert "history" in out and "instance.created" in out and "workflow" in out
    code, out, _ = weave(e2e, capsys, "show", wid, "--history", "--json")
    shown = loads(out)
    assert shown["workflow"]["status"] == "SUCCEEDED"
    assert [e["revision"] for e in shown["history"]] == list(
        range(1, len(shown["history"]) + 1))

    code, out, _ = weave(e2e, capsys, "list")
    lines = out.splitlines()
    assert lines[0].split() == ["WORKFLOW", "DEFINITION", "VERSION", "STATUS", "PAUSED",
                                "CREATED"]
    assert lines[1].startswith(parked_id) and lines[2].startswith(wid)  # newest first
    code, out, _ = weave(e2e, capsys, "list", "--limit", "1", "--json")
    page = loads(out)
    assert [w["workflow_id"] for w in page["items"]] == [parked_id] and page["next_cursor"]
    code, out, _ = weave(e2e, capsys, "list", "--limit", "1", "--cursor", page["next_cursor"])
    assert out.splitlines()[1].startswith(wid) and "next page" not in out
    code, out, _ = weave(e2e, capsys, "list", "--status", "RUNNING", "--definition",
                         "cli-parked", "--paused", "false", "--json")
    assert [w["workflow_id"] for w in loads(out)["items"]] == [parked_id]
    code, out, _ = weave(e2e, capsys, "list", "--created-before", "2000-01-01T00:00:00Z",
                         "--json")
    assert loads(out)["items"] == []


def test_errors_are_reported_with_their_code(published: E2E,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    e2e = published
    code, _, err = weave(e2e, capsys, "start", "nope", "--input", "{}")
    assert code == 1 and err.startswith("error[not_found]: ")
    code, _, err = weave(e2e, capsys, "start", "cli-wf", "--input", '{"amount": "x"}')
    assert code == 1 and err.startswith("error[validation_failed]: ")
    assert "$.input.amount" in err
    code, _, err = weave(e2e, capsys, "start", "cli-wf", "--input", "{not json")
    assert code == 1 and err.startswith("error[bad_argument]: ")
    code, _, err = weave(e2e, capsys, "show", "wf_missing")
    assert code == 1 and err.startswith("error[not_found]: ")
    code, _, err = weave(e2e, capsys, "list", "--cursor", "garbage!")
    assert code == 1 and err.startswith("error[validation_failed]: ")
    code, _, err = weave(e2e, capsys, "start", "cli-parked", "--wait", "--timeout", "0.2")
    assert code == 1 and err.startswith("error[workflow_timeout]: ")


def test_wait_reports_review(published: E2E, capsys: pytest.CaptureFixture[str]) -> None:
    e2e = published
    wf = workflow("cli-refuse")
    wf.add(task("bad", "refuse"))
    e2e.publish(wf)
    with e2e.worker():
        code, _, err = weave(e2e, capsys, "start", "cli-refuse", "--wait", "--timeout", "60")
    assert code == 1 and err.startswith("error[workflow_needs_review]: ")
    assert "task_failed" in err
