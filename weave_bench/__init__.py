"""The ``weave bench`` harness: calibration first, then named scenarios, reported as ratios.

How a scenario plugs in: a module listed in ``SCENARIO_MODULES`` defines functions
decorated with ``@scenario("name", "what it measures")``. Each takes a ``BenchContext``
and returns a list of ``Metric``. A metric may name a calibration metric in ``baseline``
(e.g. ``"L3_1"``); the report then shows ``value / baseline`` measured in the same run.

Runs are ordered A B A B: every repetition measures the calibration and then each chosen
scenario, so a noisy moment hits all of them alike; the report gives median, min and max.
"""

from __future__ import annotations

import importlib
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

Size = Literal["tiny", "small", "full"]
"""``tiny`` only proves a scenario runs (CI); ``small`` for a quick look; ``full`` to report."""

SCENARIO_MODULES: tuple[str, ...] = (
    "plan_scenario", "dispatch_scenarios", "runtime_scenarios", "integrity_scenarios",
    "wait_scenarios", "scan_scenario", "step_scenario",
)
"""Modules of this package that register scenarios (a missing one is reported, not fatal)."""


@dataclass(frozen=True)
class Target:
    """What a figure must be: ``median <= 30``, or with ``of_ratio`` its ratio to its
    baseline (``ratio >= 0.5``)."""

    op: Literal["<=", ">=", "=="]
    value: float
    of_ratio: bool = False

    def met(self, median: float, ratio: float | None) -> bool | None:
        """Whether the figure meets it; None when the ratio it is about is unknown."""
        figure = ratio if self.of_ratio else median
        if figure is None:
            return None
        if self.op == "<=":
            return figure <= self.value
        if self.op == ">=":
            return figure >= self.value
        return figure == self.value

    def __str__(self) -> str:
        sign = {"<=": "≤", ">=": "≥", "==": "="}[self.op]
        return f"{sign} {self.value:g}{'x' if self.of_ratio else ''}"


ZERO = Target("==", 0)
"""Counts that must be zero: duplicates, losses, deadlocks."""


@dataclass(frozen=True)
class Metric:
    """One measured figure of one repetition."""

    name: str
    value: float
    unit: str
    baseline: str | None = None
    """Calibration metric to divide by (same unit: e.g. decisions/s over L3 transactions/s)."""
    note: str = ""
    target: Target | None = None
    """The benchmark plan's target for this figure, judged on the median (or the ratio)."""


@dataclass
class BenchContext:
    """What a scenario gets: where the databases are, how big to run, the calibration."""

    mysql_server_url: str
    database_url: str
    """A migrated throw-away Weave database for this run."""
    size: Size
    calibration: dict[str, float] = field(default_factory=dict)
    """Calibration metric → value in the current repetition."""

    def pick(self, tiny: int, small: int, full: int) -> int:
        return {"tiny": tiny, "small": small, "full": full}[self.size]


ScenarioFn = Callable[[BenchContext], list[Metric]]


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    run: ScenarioFn


_REGISTRY: dict[str, Scenario] = {}


def scenario(name: str, description: str) -> Callable[[ScenarioFn], ScenarioFn]:
    """Register a scenario under ``name`` (unique)."""

    def register(fn: ScenarioFn) -> ScenarioFn:
        if name in _REGISTRY:
            raise ValueError(f"bench scenario {name!r} is registered twice")
        _REGISTRY[name] = Scenario(name, description, fn)
        return fn

    return register


def load_scenarios() -> tuple[dict[str, Scenario], dict[str, str]]:
    """Import the scenario modules; return the registry and modules that failed to load."""
    failed: dict[str, str] = {}
    for module in SCENARIO_MODULES:
        try:
            importlib.import_module(f"{__name__}.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{module}":
                raise
            failed[module] = "not present in this build"
    return dict(_REGISTRY), failed


@dataclass(frozen=True)
class Summary:
    """Median, min and max of one metric over the repetitions, and its ratio to baseline."""

    scenario: str
    name: str
    unit: str
    median: float
    low: float
    high: float
    runs: int
    baseline: str | None
    ratio: float | None
    note: str
    target: Target | None = None

    @property
    def verdict(self) -> str:
        """``met``, ``missed``, or empty (no target, or its ratio unknown)."""
        met = None if self.target is None else self.target.met(self.median, self.ratio)
        return "" if met is None else ("met" if met else "missed")

    def to_json(self) -> dict[str, object]:
        return {
            "scenario": self.scenario,
            "metric": self.name,
            "unit": self.unit,
            "median": self.median,
            "min": self.low,
            "max": self.high,
            "runs": self.runs,
            "baseline": self.baseline,
            "ratio_to_baseline": self.ratio,
            "note": self.note,
            "target": None if self.target is None else str(self.target),
            "verdict": self.verdict or None,
        }


def summarise(
    scenario_name: str, samples: list[Metric], calibration: dict[str, list[float]]
) -> Summary:
    values = [m.value for m in samples]
    first = samples[0]
    ratio = None
    if first.baseline and calibration.get(first.baseline):
        ratio = statistics.median(values) / statistics.median(calibration[first.baseline])
    return Summary(
        scenario=scenario_name,
        name=first.name,
        unit=first.unit,
        median=statistics.median(values),
        low=min(values),
        high=max(values),
        runs=len(values),
        baseline=first.baseline,
        ratio=ratio,
        note=first.note,
        target=first.target,
    )


__all__ = [
    "SCENARIO_MODULES",
    "ZERO",
    "BenchContext",
    "Metric",
    "Scenario",
    "Size",
    "Summary",
    "Target",
    "load_scenarios",
    "scenario",
    "summarise",
]
