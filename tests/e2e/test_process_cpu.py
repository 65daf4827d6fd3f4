"""The bench's readings of other processes' CPU time (``weave_bench.process_cpu``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.conftest import MYSQL_SERVER_URL
from weave_bench.process_cpu import CpuMeter, database_server_pid, process_cpu_seconds


def test_a_busy_process_is_measured_with_its_threads() -> None:
    busy = subprocess.Popen([sys.executable, "-c",
                             "import threading, time\n"
                             "def spin():\n"
                             "    end = time.process_time() + 0.3\n"
                             "    while time.process_time() < end: pass\n"
                             "t = threading.Thread(target=spin); t.start(); t.join()\n"
                             "input()\n"], stdin=subprocess.PIPE, text=True)
    try:
        meter = CpuMeter({"busy": busy.pid, "absent": None})
        meter.start()
        time.sleep(1.0)  # the spinning thread has ended by now: its time still counts
        meter.stop()
        assert set(meter.spent) == {"busy"}
        assert 0.25 <= meter.spent["busy"] <= 1.0
    finally:
        busy.communicate("\n", timeout=10)


def test_a_process_that_is_gone_gives_no_reading() -> None:
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    assert process_cpu_seconds(int(ended.stdout)) is None
    assert (process_cpu_seconds(os.getpid()) or 0) > 0


def test_a_database_elsewhere_is_not_read() -> None:
    assert database_server_pid("mysql+pymysql://root@db.example.com/weave") is None


@pytest.mark.mysql
def test_the_local_database_server_is_found() -> None:
    # CI's MariaDB runs on the machine the tests run on.
    pid = database_server_pid(MYSQL_SERVER_URL)
    assert pid is not None
    with open(f"/proc/{pid}/comm") as comm:
        assert comm.read().strip() in {"mariadbd", "mysqld"}


def test_a_process_tree_counts_its_children() -> None:
    # As `weave serve --workers 2`: the parent idles, its two children work.
    child = ("import sys, time\\n"
             "sys.stdin.readline()\\n"
             "end = time.process_time() + 0.3\\n"
             "while time.process_time() < end: pass\\n"
             "sys.stdin.readline()\\n")
    parent = subprocess.Popen(
        [sys.executable, "-c",
         "import subprocess, sys\n"
         f"kids = [subprocess.Popen([sys.executable, '-c', '{child}'], stdin=subprocess.PIPE,"
         " text=True) for _ in range(2)]\n"
         "print('ready', flush=True)\n"
         "sys.stdin.readline()\n"
         "for kid in kids: kid.stdin.write('go\\n'); kid.stdin.flush()\n"
         "sys.stdin.readline()\n"
         "for kid in kids: kid.communicate('end\\n')\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None and parent.stdin is not None
    try:
        assert parent.stdout.readline().strip() == "ready"
        meter = CpuMeter({"engine": parent.pid})
        meter.start()
        parent.stdin.write("go\n")
        parent.stdin.flush()
        time.sleep(1.5)  # each child spins 0.3 s of CPU
        meter.stop()
        assert 0.5 <= meter.spent["engine"] <= 1.5
    finally:
        parent.communicate("end\n", timeout=10)
