"""S4/S5 (``weave bench waits signals``) run through the harness at tiny size: they run end
to end and report sane figures (the numbers themselves are judged in docs/waits.md)."""

from __future__ import annotations

import math

from tests.conftest import MYSQL_SERVER_URL, create_mysql_database, drop_mysql_database
from weave_bench.runner import run


def test_waits_and_signals_scenarios_run() -> None:
    drop_mysql_database(create_mysql_database("weave_probe"))  # fail early without MariaDB
    result = run(["waits", "signals"], repeat=1, size="tiny", server_url=MYSQL_SERVER_URL)
    figures = {(s.scenario, s.name): s.median for s in result.summaries}
    assert all(math.isfinite(v) and v >= 0 for v in figures.values()), figures
    assert figures[("signals", "signal_to_claimable_p99")] >= figures[
        ("signals", "signal_to_claimable_p50")]
    assert figures[("waits", "burst_lateness_p99")] >= figures[("waits", "burst_lateness_p50")]
    assert ("waits", "tick_scan_ms_100_waiting") in figures
