"""Runs calibration and scenarios A B A B, prints the table and writes the JSON report."""

from __future__ import annotations

import json
import os
import platform
import secrets
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pymysql

from weave_bench import BenchContext, Metric, Size, Summary, load_scenarios, summarise
from weave_bench.calibration import measure, mysql_params
from weave_core.storage.migrate import upgrade

CALIBRATION = "calibration"


@dataclass
class Report:
    machine: dict[str, Any]
    summaries: list[Summary] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "machine": self.machine,
            "results": [s.to_json() for s in self.summaries],
            "skipped": self.skipped,
        }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info(server_url: str) -> dict[str, Any]:
    conn = pymysql.connect(**{**mysql_params(server_url), "database": None})
    try:
        cur = conn.cursor()
        cur.execute("SELECT VERSION(), @@innodb_flush_log_at_trx_commit, @@sync_binlog")
        version, flush, sync_binlog = cur.fetchone() or (None, None, None)
    finally:
        conn.close()

    def dist(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "absent"

    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "database": version,
        "innodb_flush_log_at_trx_commit": flush,
        "sync_binlog": sync_binlog,
        "packages": {n: dist(n) for n in ("sqlalchemy", "pymysql", "starlette", "uvicorn")},
        "pool_size": 10,
    }


def _scratch_database(server_url: str) -> str:
    name = f"weave_bench_{secrets.token_hex(4)}"
    conn = pymysql.connect(**{**mysql_params(server_url), "database": None})
    try:
        conn.cursor().execute(
            f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
        )
    finally:
        conn.close()
    parts = urlsplit(server_url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", "charset=utf8mb4", ""))


def _drop_database(server_url: str, url: str) -> None:
    conn = pymysql.connect(**{**mysql_params(server_url), "database": None})
    try:
        conn.cursor().execute(f"DROP DATABASE IF EXISTS `{urlsplit(url).path.lstrip('/')}`")
    finally:
        conn.close()


Progress = Callable[[int, str, list[Metric], float], None]
"""Told after each scenario of each repetition: (repetition, scenario, metrics, seconds)."""


def run(names: list[str] | None, *, repeat: int, size: Size, server_url: str,
        progress: Progress | None = None) -> Report:
    registry, failed = load_scenarios()
    chosen = list(registry) if not names else names
    unknown = [n for n in chosen if n not in registry]
    if unknown:
        raise SystemExit(
            f"unknown scenario(s) {', '.join(unknown)}; known: {', '.join(sorted(registry))}"
        )
    report = Report(machine=machine_info(server_url), skipped=dict(failed))
    database_url = _scratch_database(server_url)
    try:
        upgrade(database_url)
        samples: dict[tuple[str, str], list[Metric]] = defaultdict(list)
        calibration: dict[str, list[float]] = defaultdict(list)
        for round_no in range(1, repeat + 1):
            ctx = BenchContext(server_url, database_url, size)
            began = time.monotonic()
            measured = list(measure(ctx))
            for metric in measured:
                samples[(CALIBRATION, metric.name)].append(metric)
                calibration[metric.name].append(metric.value)
                ctx.calibration[metric.name] = metric.value
            if progress is not None:
                progress(round_no, CALIBRATION, measured, time.monotonic() - began)
            for name in chosen:
                began = time.monotonic()
                metrics = list(registry[name].run(ctx))
                for metric in metrics:
                    samples[(name, metric.name)].append(metric)
                if progress is not None:
                    progress(round_no, name, metrics, time.monotonic() - began)
        for (scenario_name, _), metrics in samples.items():
            report.summaries.append(summarise(scenario_name, metrics, calibration))
    finally:
        _drop_database(server_url, database_url)
    return report


def format_table(report: Report) -> str:
    rows = [("scenario", "metric", "median", "min", "max", "unit", "ratio", "baseline",
             "target")]
    for s in report.summaries:
        rows.append(
            (
                s.scenario,
                s.name,
                f"{s.median:,.1f}",
                f"{s.low:,.1f}",
                f"{s.high:,.1f}",
                s.unit,
                "" if s.ratio is None else f"{s.ratio:.2f}x",
                s.baseline or "",
                "" if s.target is None else f"{s.target} {s.verdict}".rstrip(),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for name, why in report.skipped.items():
        lines.append(f"skipped: {name} ({why})")
    return "\n".join(lines)


def write_json(report: Report, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.to_json(), indent=2, default=str) + "\n")
    return path


def default_output() -> Path:
    return Path("bench-results") / time.strftime("bench-%Y%m%dT%H%M%SZ.json", time.gmtime())


__all__ = ["Report", "default_output", "format_table", "run", "write_json"]
