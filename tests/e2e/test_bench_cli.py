"""``weave bench`` prints each scenario as it finishes (here the in-process step scenario at
tiny size, on the test MariaDB server), ``--json`` puts the report on stdout and the
progress on stderr, and an unknown scenario is one error line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import MYSQL_SERVER_URL
from weave_http.cli import main

pytestmark = [pytest.mark.mysql]


def test_progress_lines_then_the_report_as_json(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench", "step", "--size", "tiny", "--repeat", "1", "--json",
                 "--mysql-url", MYSQL_SERVER_URL, "--output", str(tmp_path / "r.json")])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    progress = captured.err.splitlines()
    assert [line.split(" done in ")[0] for line in progress] == [
        "[1/1] calibration", "[1/1] step"]
    assert "statements_per_step " in progress[1] and " count" in progress[1]
    report = json.loads(captured.out)
    assert {r["scenario"] for r in report["results"]} == {"calibration", "step"}
    by = {r["metric"]: r for r in report["results"] if r["scenario"] == "step"}
    # A figure with a target of the benchmark plan carries it and whether it was met.
    assert (by["statements_per_step"]["target"], by["statements_per_step"]["verdict"]) == (
        "≤ 20", "met")
    assert (by["commits_per_step"]["target"], by["commits_per_step"]["verdict"]) == ("= 1", "met")
    assert (by["step_ms_p50"]["target"], by["step_ms_p50"]["verdict"]) == (None, None)
    assert json.loads((tmp_path / "r.json").read_text())["results"] == report["results"]


def test_an_unknown_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "no-such-scenario", "--mysql-url", MYSQL_SERVER_URL]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error[unknown_scenario]: unknown scenario(s) no-such-scenario; ")
    assert err.count("\n") == 1
