"""The runtime bench scenarios (S1, S2, S3, S8, S9) run through the harness at tiny size.

This proves each scenario runs end to end and reports sane figures; the numbers
themselves are judged in docs/benchmarks.md from ``--size small``/``full`` runs. The
zero-duplicate and zero-loss figures of S8 and S9 are asserted here: they must hold at
any size.
"""

from __future__ import annotations

import math

import pytest

from tests.conftest import MYSQL_SERVER_URL, create_mysql_database, drop_mysql_database
from weave_http.bench.runner import run

pytestmark = [pytest.mark.mysql]


@pytest.fixture(scope="module")
def report() -> dict[tuple[str, str], float]:
    drop_mysql_database(create_mysql_database("weave_probe"))  # skip/fail early w/o MariaDB
    result = run(["s1", "s2", "s3", "s8", "s9"], repeat=1, size="tiny",
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


def test_s2_reports_throughput_without_deadlocks(report: dict[tuple[str, str], float]) -> None:
    assert report[("s2", "steps_per_s")] > 0
    assert report[("s2", "p99")] >= report[("s2", "p50")] > 0
    assert report[("s2", "deadlocks")] == 0
    assert report[("s2", "lock_wait_timeouts")] == 0


def test_s8_two_engines_duplicate_nothing(report: dict[tuple[str, str], float]) -> None:
    assert report[("s8", "duplicate_tasks")] == 0
    assert report[("s8", "unfinished")] == 0


def test_s9_kill_9_loses_and_duplicates_nothing(report: dict[tuple[str, str], float]) -> None:
    assert report[("s9", "lost")] == 0
    assert report[("s9", "duplicated")] == 0
    assert report[("s9", "restart")] > 0
    assert report[("s9", "time_to_resume")] > 0
