"""Calibration L1-L4: the physical limits of this machine, measured at the start of every run.

- L1 ``SELECT 1`` round trip over TCP with raw PyMySQL (µs, median).
- L2 one-row INSERT + COMMIT per second, 1 connection.
- L3 the advance floor: SELECT … FOR UPDATE + UPDATE + 2 INSERT + COMMIT per second, on 1
  and on 4 connections (4 threads, distinct rows).
- L4 a trivial Starlette JSON endpoint on uvicorn (one process), requests per second from
  a keep-alive raw-socket client on 4 threads (the client shares the machine's 2 cores).
"""

from __future__ import annotations

import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pymysql

from weave_bench import BenchContext, Metric


def mysql_params(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    params: dict[str, Any] = {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 3306,
        "user": parts.username or "root",
        "password": parts.password or "",
        "autocommit": False,
    }
    database = parts.path.lstrip("/")
    if database:
        params["database"] = database
    return params


def _connect(url: str) -> pymysql.connections.Connection[Any]:
    return pymysql.connect(**mysql_params(url))


def _rate(duration: float, threads: int, work: Callable[[int], Callable[[], None]]) -> float:
    """Operations per second of ``threads`` loops running ``work(i)()`` for ``duration`` s."""
    counts = [0] * threads
    stop = time.perf_counter() + duration

    def loop(index: int) -> None:
        step = work(index)
        while time.perf_counter() < stop:
            step()
            counts[index] += 1

    workers = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    started = time.perf_counter()
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    return sum(counts) / (time.perf_counter() - started)


def l1_select_one_us(url: str, iterations: int) -> float:
    conn = _connect(url)
    try:
        cur = conn.cursor()
        samples = []
        for _ in range(iterations):
            t0 = time.perf_counter()
            cur.execute("SELECT 1")
            cur.fetchall()
            samples.append(time.perf_counter() - t0)
        return statistics.median(samples) * 1e6
    finally:
        conn.close()


def _prepare_tables(url: str, rows: int) -> None:
    conn = _connect(url)
    try:
        cur = conn.cursor()
        cur.execute("DROP TABLE IF EXISTS bench_cal_rows")
        cur.execute("DROP TABLE IF EXISTS bench_cal_log")
        cur.execute(
            "CREATE TABLE bench_cal_rows (id INT PRIMARY KEY, v BIGINT NOT NULL) ENGINE=InnoDB"
        )
        cur.execute(
            "CREATE TABLE bench_cal_log (id BIGINT AUTO_INCREMENT PRIMARY KEY, row_id INT NOT NULL,"
            " note VARCHAR(64) NOT NULL) ENGINE=InnoDB"
        )
        cur.executemany("INSERT INTO bench_cal_rows VALUES (%s, 0)", [(i,) for i in range(rows)])
        conn.commit()
    finally:
        conn.close()


def l2_insert_commit_per_s(url: str, duration: float) -> float:
    conn = _connect(url)
    cur = conn.cursor()
    try:

        def work(_: int) -> Callable[[], None]:
            def step() -> None:
                cur.execute("INSERT INTO bench_cal_log (row_id, note) VALUES (0, 'l2')")
                conn.commit()

            return step

        return _rate(duration, 1, work)
    finally:
        conn.close()


def l3_advance_floor_per_s(url: str, duration: float, threads: int) -> float:
    conns = [_connect(url) for _ in range(threads)]
    try:

        def work(index: int) -> Callable[[], None]:
            conn = conns[index]
            cur = conn.cursor()

            def step() -> None:
                cur.execute("SELECT v FROM bench_cal_rows WHERE id = %s FOR UPDATE", (index,))
                cur.fetchall()
                cur.execute("UPDATE bench_cal_rows SET v = v + 1 WHERE id = %s", (index,))
                cur.execute("INSERT INTO bench_cal_log (row_id, note) VALUES (%s, 'a')", (index,))
                cur.execute("INSERT INTO bench_cal_log (row_id, note) VALUES (%s, 'b')", (index,))
                conn.commit()

            return step

        return _rate(duration, threads, work)
    finally:
        for conn in conns:
            conn.close()


TRIVIAL_APP = """
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

async def ping(request):
    return JSONResponse({"ok": True})

app = Starlette(routes=[Route("/ping", ping)])
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _http_loop(port: int, opened: list[socket.socket]) -> Callable[[], None]:
    sock = socket.create_connection(("127.0.0.1", port))
    opened.append(sock)
    request = b"GET /ping HTTP/1.1\r\nHost: bench\r\n\r\n"
    buffer = bytearray()

    def step() -> None:
        sock.sendall(request)
        while True:
            head_end = buffer.find(b"\r\n\r\n")
            if head_end >= 0:
                head = bytes(buffer[:head_end]).lower()
                length = int(head.split(b"content-length:")[1].split(b"\r\n")[0])
                total = head_end + 4 + length
                if len(buffer) >= total:
                    del buffer[:total]
                    return
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection")
            buffer.extend(chunk)

    return step


def l4_http_per_s(duration: float, threads: int = 4) -> float:
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            TRIVIAL_APP
            + "\nimport uvicorn\n"
            + f"uvicorn.run(app, host='127.0.0.1', port={port}, log_level='error')",
        ]
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the L4 calibration server did not start") from None
                time.sleep(0.05)
        opened: list[socket.socket] = []
        try:
            return _rate(duration, threads, lambda _: _http_loop(port, opened))
        finally:
            for sock in opened:
                sock.close()
    finally:
        server.terminate()
        server.wait(timeout=10)


def measure(ctx: BenchContext) -> list[Metric]:
    """Measure L1-L4 against ``ctx.database_url`` (a throw-away database)."""
    duration = {"tiny": 0.3, "small": 1.5, "full": 4.0}[ctx.size]
    _prepare_tables(ctx.database_url, rows=8)
    return [
        Metric("L1", l1_select_one_us(ctx.database_url, ctx.pick(200, 1000, 3000)), "µs",
               note="SELECT 1 round trip, raw PyMySQL, TCP (median)"),
        Metric("L2", l2_insert_commit_per_s(ctx.database_url, duration), "commits/s",
               note="one-row INSERT + COMMIT, 1 connection"),
        Metric("L3_1", l3_advance_floor_per_s(ctx.database_url, duration, 1), "txn/s",
               note="SELECT FOR UPDATE + UPDATE + 2 INSERT + COMMIT, 1 connection"),
        Metric("L3_4", l3_advance_floor_per_s(ctx.database_url, duration, 4), "txn/s",
               note="the same on 4 connections"),
        Metric("L4", l4_http_per_s(duration), "req/s",
               note="trivial Starlette JSON endpoint, uvicorn, 1 process, 4 client threads"),
    ]


__all__ = ["measure", "mysql_params"]
