"""``weave demo``: the README's first command runs the main job on SQLite and succeeds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from weave_http.demo import order_workflow, run_demo


def test_the_demo_runs_every_step_on_sqlite(tmp_path: Path) -> None:
    lines: list[str] = []
    code = run_demo(f"sqlite:///{tmp_path / 'demo.db'}", say=lines.append)
    assert code == 0, lines
    assert lines[0].startswith("1. server listening on http://127.0.0.1:")
    assert "created=True" in lines[1]
    assert "created=False (idempotent)" in lines[2]
    assert lines[3].endswith("identical to the SDK's JSON: True")
    assert "$.steps[3].input.reservation: ref_unknown_step" in lines[4]
    # two orders run through a real worker; the exact amounts choose different branches
    assert lines[6].startswith("7. order A-1 for 1000.00: SUCCEEDED (no manual check)")
    assert lines[7].startswith("8. order B-2 for 1000.01: SUCCEEDED (manual check)")
    assert "'with': {'reservation': 'R-B-2'}" in lines[7]
    assert lines[-1].startswith("demo finished")


def test_the_demo_command_exits_zero() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "weave_http.cli", "demo"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "demo finished" in result.stdout


def test_the_demo_workflow_is_valid_locally() -> None:
    from weave_sdk import validate

    assert validate(order_workflow()) == []
