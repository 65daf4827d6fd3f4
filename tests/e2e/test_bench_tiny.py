"""The runtime bench scenarios (the step, S1, S2 on one and two engines, S3, S8, S9) run
through the harness at tiny size.

This proves each scenario runs end to end and reports sane figures; the numbers
themselves are judged in docs/benchmarks.md from ``--size small``/``full`` runs. The
zero-duplicate and zero-loss figures of S8 and S9 are asserted here: they must hold at
any size.
"""

from __future__ import annotations

import math

import pytest

from tests.conftest import MYSQL_SERVER_URL, create_mysql_database, drop_mysql_database
from weave_bench.runner import run

pytestmark = [pytest.mark.mysql]


@pytest.fixture(scope="module")
def report() -> dict[tuple[str, str], float]:
    drop_mysql_database(create_mysql_database("weave_probe"))  # skip/fail early w/o MariaDB
    result = run(["step", "s1", "s2", "s2x2", "s3", "s8", "s9"], repeat=1, size="tiny",
                 server_url=MYSQL_SERVER_URL)
    return {(s.scenario, s.name): s.median for s in result.summaries}


def test_s1_and_s3_report_latencies(report: dict[tuple[str, str], float]) -> None:
    for scenario in ("s1", "s3"):
        p50 = report[(scenario, "e2e_p50")]
        assert 0 < p50 < 60_000 and math.isfinite(p50)
        assert report[(scenario, "e2e_p95")] >= p50
    assert report[("s1", "e2e_p99")] >= report[("s1", "e2e_p95")]
    assert report[("s1", "engine_gap_p50")] >= 0
    assert report[("s3", "join_overhead_p50")] >= 0


@pytest.mark.parametrize(("scenario", "shape", "tasks"), [("s1", "seq10", 10),
                                                         ("s3", "fan10", 11)])
def test_latencies_report_where_their_time_goes(
    report: dict[tuple[str, str], float], scenario: str, shape: str, tasks: int,
) -> None:
    # The database runs on this machine in CI: its CPU and the engine's are read from /proc.
    assert report[(scenario, "engine_cpu_per_step")] > 0
    assert report[(scenario, "database_cpu_per_step")] > 0
    l3 = report[("calibration", "L3_1")]
    assert report[(scenario, "e2e_p50_in_l3")] == pytest.approx(
        report[(scenario, "e2e_p50")] / 1000 * l3)
    assert report[(scenario, f"database_cpu_per_{shape}_in_l3")] == pytest.approx(
        report[(scenario, "database_cpu_per_step")] * tasks / 1000 * l3)


def test_s2_reports_throughput_without_deadlocks(report: dict[tuple[str, str], float]) -> None:
    for scenario in ("s2", "s2x2"):  # one engine process, then two on one port
        assert report[(scenario, "steps_per_s")] > 0
        assert report[(scenario, "p99")] >= report[(scenario, "p50")] > 0
        assert report[(scenario, "deadlocks")] == 0
        assert report[(scenario, "lock_wait_timeouts")] == 0
        assert report[(scenario, "worker_cpu_per_step")] > 0
        # Read from /proc: the engine process with its `--workers` children, and MariaDB.
        assert report[(scenario, "engine_cpu_per_step")] > 0
        assert report[(scenario, "database_cpu_per_step")] > 0
    assert report[("s1", "worker_cpu_per_step")] > 0


def test_a_step_is_one_transaction_of_twenty_statements(
    report: dict[tuple[str, str], float],
) -> None:
    assert report[("step", "commits_per_step")] == 1
    assert report[("step", "statements_per_step")] <= 20
    assert report[("step", "one_transaction_share")] == 1
    assert report[("step", "engine_cpu_per_step")] > 0


def test_s8_two_engines_duplicate_nothing(report: dict[tuple[str, str], float]) -> None:
    assert report[("s8", "duplicate_tasks")] == 0
    assert report[("s8", "unfinished")] == 0


def test_s9_kill_9_loses_and_duplicates_nothing(report: dict[tuple[str, str], float]) -> None:
    assert report[("s9", "lost")] == 0
    assert report[("s9", "duplicated")] == 0
    assert report[("s9", "restart")] > 0
    assert report[("s9", "time_to_resume")] > 0
