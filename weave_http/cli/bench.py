"""``weave bench``: calibration L1-L4, then named scenarios, as a table and a JSON report."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from weave_http.cli.failures import CliError

if TYPE_CHECKING:
    from weave_bench import Metric


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="measure performance as ratios to this machine's calibration",
        description=(
            "Measure the calibration L1-L4 and then each named scenario, repeated A B A B; "
            "print medians with min and max and their ratio to the calibration measured in "
            "the same run, and write a JSON report. Needs a MariaDB/MySQL server."
        ),
    )
    parser.add_argument("scenarios", nargs="*", help="scenario names (default: all); see --list")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument(
        "--size", choices=("tiny", "small", "full"), default="full",
        help="tiny proves a scenario runs; full is what reports use (default: full)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="repetitions (default: 3)")
    parser.add_argument(
        "--mysql-url",
        default=os.environ.get("WEAVE_BENCH_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/"),
        help="server URL; a throw-away database is created and dropped (WEAVE_BENCH_MYSQL_URL)",
    )
    parser.add_argument("--output", type=Path, help="JSON report path (default: bench-results/)")
    parser.add_argument("--json", action="store_true",
                        help="print the report as JSON on stdout (progress goes to stderr)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from weave_bench import load_scenarios
    from weave_bench.runner import default_output, format_table, run, write_json

    if args.list:
        registry, failed = load_scenarios()
        if args.json:
            print(json.dumps({"scenarios": {n: registry[n].description for n in sorted(registry)},
                              "unavailable": failed}))
            return 0
        for name in sorted(registry):
            print(f"{name:24} {registry[name].description}")
        for name, why in failed.items():
            print(f"{name:24} (unavailable: {why})")
        return 0
    if args.repeat < 1:
        raise CliError("bad_argument", "--repeat must be at least 1")
    registry, _ = load_scenarios()
    unknown = [n for n in args.scenarios if n not in registry]
    if unknown:
        raise CliError("unknown_scenario", f"unknown scenario(s) {', '.join(unknown)}; "
                       f"known: {', '.join(sorted(registry))}")
    progress_out = sys.stderr if args.json else sys.stdout

    def progress(round_no: int, name: str, metrics: list[Metric], seconds: float) -> None:
        figures = ", ".join(f"{m.name} {m.value:,.1f} {m.unit}" for m in metrics)
        print(f"[{round_no}/{args.repeat}] {name} done in {seconds:.1f} s: {figures or '-'}",
              file=progress_out, flush=True)

    report = run(args.scenarios or None, repeat=args.repeat, size=args.size,
                 server_url=args.mysql_url, progress=progress)
    path = write_json(report, args.output or default_output())
    if args.json:
        print(json.dumps(report.to_json(), default=str))
        return 0
    print(format_table(report))
    print(f"report written to {path}")
    return 0
