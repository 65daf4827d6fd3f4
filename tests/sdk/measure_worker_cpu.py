"""Measure the SDK Worker's CPU per step against a live ``weave serve`` (not a test).

::

    .venv/bin/python -m tests.sdk.measure_worker_cpu [--tasks 1000] [--before DIR]
        [--rounds 2] [--database-url URL]

Starts one ``weave serve`` (SQLite in a temporary directory unless ``--database-url``),
then alternates runs A B A B: before each run it creates ``--tasks`` standalone tasks of a
no-op handler, then a child process runs a Worker (concurrency 4) until it has completed
them all and prints the child's own CPU time (``getrusage``, user + system, from just
before ``run`` to the stop). ``--before DIR`` is a directory holding another
``weave_sdk`` package (e.g. ``git archive HEAD weave_sdk | tar -x -C DIR``): its runs are
labelled ``before``, the checkout's ``after``. The worker's own ``stats`` (when it has
them) are printed beside the rusage figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

import httpx

CHILD = r"""
import json, resource, sys, threading, time
sys.path.insert(0, sys.argv[1])
import asyncio
from weave_sdk import Client
from weave_sdk.worker import Worker
total = int(sys.argv[2])
worker = Worker(Client(), queue="cpu", concurrency=4, wait_seconds=2)

@worker.handler("noop")
def noop(data):
    return {"ok": True}

def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

def watch():
    while worker.completed < total:
        time.sleep(0.05)
    worker.stop()

threading.Thread(target=watch, daemon=True).start()
cpu0, wall0 = usage(), time.monotonic()
t = threading.Thread(target=lambda: asyncio.run(worker.run_async()))
t.start(); t.join()
cpu, wall = usage() - cpu0, time.monotonic() - wall0
stats = getattr(worker, "stats", None)
print(json.dumps({"tasks": worker.completed, "cpu_s": cpu, "wall_s": wall,
                  "stats_cpu_s": getattr(stats, "cpu_seconds", None),
                  "stats_tasks": getattr(stats, "tasks_completed", None)}))
"""


def _weave(*args: str) -> str:
    exe = Path(sys.executable).with_name("weave")
    out = subprocess.run([str(exe), *args], check=True, capture_output=True, text=True)
    return out.stdout


def _create_tasks(base: str, token: str, namespace: str, n: int) -> None:
    headers = {"Authorization": f"Bearer {token}", "content-type": "application/json"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
        for i in range(n):
            body = json.dumps({"queue": "cpu", "handler": "noop", "input": {"i": i}})
            r = http.post(f"/v1/namespaces/{namespace}/tasks", content=body)
            r.raise_for_status()


def _run_child(sdk_root: str, n: int, env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", CHILD, sdk_root, str(n)], env=env,
                         check=True, capture_output=True, text=True, timeout=600)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    from tests.live_server import start_server

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--before", default=None, help="a directory holding the old weave_sdk")
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parents[2])
    with tempfile.TemporaryDirectory(prefix="weave-cpu-") as tmp:
        url = args.database_url or f"sqlite:///{tmp}/weave.db"
        if url.startswith("sqlite"):
            _weave("migrate", "--database-url", url)
        _weave("namespace", "create", "cpu", "--database-url", url)
        token = _weave("token", "create", "--namespace", "cpu", "--permission", "admin",
                       "--database-url", url).strip().splitlines()[-1]
        server = start_server(url)
        try:
            env = {**os.environ, "WEAVE_URL": server.base_url, "WEAVE_TOKEN": token,
                   "WEAVE_NAMESPACE": "cpu"}
            variants = [("after", here)]
            if args.before:
                variants.insert(0, ("before", args.before))
            results: dict[str, list[float]] = {name: [] for name, _ in variants}
            for _ in range(args.rounds):
                for name, root in variants:
                    # A claim cut at the previous run's stop may still wait on the server
                    # (up to its wait_seconds, 2 s) and would take tasks for a dead worker.
                    time.sleep(3)
                    _create_tasks(server.base_url, token, "cpu", args.tasks)
                    started = time.monotonic()
                    r = _run_child(root, args.tasks, env)
                    per = r["cpu_s"] / r["tasks"] * 1000
                    results[name].append(per)
                    stats = ""
                    if r["stats_tasks"]:
                        stats = (f", stats {r['stats_cpu_s'] / r['stats_tasks'] * 1000:.3f} "
                                 f"ms/step")
                    print(f"{name}: {r['tasks']} tasks, worker CPU {per:.3f} ms/step "
                          f"(rusage){stats}, {r['tasks'] / r['wall_s']:.0f} steps/s, "
                          f"run {time.monotonic() - started:.1f} s", flush=True)
            for name, values in results.items():
                print(f"{name}: median {median(values):.3f} ms/step over {len(values)} run(s)")
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
