"""``weave bench``: calibration L1-L4, then named scenarios, as a table and a JSON report."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from weave_http.bench import load_scenarios


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
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from weave_http.bench.runner import default_output, format_table, run, write_json

    if args.list:
        registry, failed = load_scenarios()
        for name in sorted(registry):
            print(f"{name:24} {registry[name].description}")
        for name, why in failed.items():
            print(f"{name:24} (unavailable: {why})")
        return 0
    if args.repeat < 1:
        print("error[bad_request]: --repeat must be at least 1")
        return 2
    report = run(args.scenarios or None, repeat=args.repeat, size=args.size,
                 server_url=args.mysql_url)
    print(format_table(report))
    path = write_json(report, args.output or default_output())
    print(f"report written to {path}")
    return 0
