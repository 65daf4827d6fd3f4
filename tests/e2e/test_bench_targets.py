"""A bench figure's target is judged on its median, or on its ratio to its baseline, and
shown in the table beside it."""

from __future__ import annotations

from weave_bench import ZERO, Metric, Target, summarise
from weave_bench.runner import Report, format_table


def _summary(target: Target, *values: float, baseline: str | None = None,
             calibration: dict[str, list[float]] | None = None) -> str:
    samples = [Metric("figure", v, "ms", baseline=baseline, target=target) for v in values]
    return summarise("s", samples, calibration or {}).verdict


def test_a_median_at_the_bound_meets_it() -> None:
    assert _summary(Target("<=", 30), 10.0, 30.0, 99.0) == "met"  # median 30
    assert _summary(Target("<=", 30), 31.0) == "missed"
    assert _summary(Target(">=", 5), 5.0) == "met"
    assert _summary(Target(">=", 5), 4.9) == "missed"
    assert _summary(ZERO, 0.0, 0.0, 1.0) == "met"  # the median, not the worst run
    assert _summary(ZERO, 1.0) == "missed"


def test_a_ratio_target_needs_its_baseline() -> None:
    half = Target(">=", 0.5, of_ratio=True)
    assert _summary(half, 600.0, baseline="L3_1", calibration={"L3_1": [1000.0]}) == "met"
    assert _summary(half, 400.0, baseline="L3_1", calibration={"L3_1": [1000.0]}) == "missed"
    assert _summary(half, 400.0, baseline="L3_1") == ""  # no calibration: not judged


def test_the_table_shows_the_target_and_the_verdict() -> None:
    report = Report(machine={}, skipped={})
    report.summaries.append(summarise("s1", [Metric("e2e_p50_in_l3", 99.5, "L3_1 periods",
                                                    target=Target("<=", 30))], {}))
    report.summaries.append(summarise("s2", [Metric("steps_per_s", 252.0, "steps/s",
                                                    baseline="L3_1",
                                                    target=Target(">=", 0.5, of_ratio=True))],
                                      {"L3_1": [1770.0]}))
    report.summaries.append(summarise("s1", [Metric("e2e_p50", 55.0, "ms")], {}))
    lines = format_table(report).splitlines()
    assert lines[0].split() == ["scenario", "metric", "median", "min", "max", "unit", "ratio",
                                "baseline", "target"]
    assert lines[2].rstrip().endswith("≤ 30 missed")
    assert "0.14x" in lines[3] and lines[3].rstrip().endswith("≥ 0.5x missed")
    assert lines[4].rstrip().endswith("ms")  # no target: nothing after the unit
