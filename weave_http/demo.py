"""The demo scenario: a real server on a throw-away SQLite file, driven through the SDK.

``weave demo`` (and ``scripts/demo``) runs it. Each step prints what it did, so a new user
sees the product work end to end on the embedded default without any set-up.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import uvicorn

from weave_core.access.identity import Permission, create_namespace, create_token
from weave_core.engine import Engine
from weave_core.storage.migrate import prepare_database
from weave_http.app import create_app
from weave_sdk import (
    Case,
    Client,
    Default,
    Handler,
    TaskStep,
    ValidationError,
    Workflow,
    gt,
    ref,
)
from weave_sdk.worker import Worker

DEMO_NAMESPACE = "demo"


def order_workflow() -> Workflow:
    """An order: validate, route amounts over 1000.00 to a manual check, reserve and charge
    in parallel, ship."""
    wf = Workflow(
        "order-fulfilment",
        version="1",
        input_schema={
            "type": "object",
            "required": ["order_id", "amount"],
            "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
        },
    )
    order_id = ref.input("order_id")
    wf.task(
        "validate",
        queue="orders",
        handler=Handler("validate_order", "1"),
        input={"order_id": order_id, "amount": ref.input("amount")},
        output_schema={
            "type": "object",
            "required": ["ok"],
            "properties": {"ok": {"type": "boolean"}},
        },
    )
    wf.branch(
        "route",
        [
            Case(
                gt(ref.input("amount"), Decimal("1000.00")),
                [
                    TaskStep(
                        "manual_check",
                        queue="orders",
                        handler=Handler("manual_check", "1"),
                        input={"order_id": order_id},
                    )
                ],
            ),
            Default([]),
        ],
    )
    wf.parallel(
        "prepare",
        {
            "stock": [
                TaskStep(
                    "reserve",
                    queue="orders",
                    handler=Handler("reserve_stock", "1"),
                    input={"order_id": order_id},
                )
            ],
            "payment": [
                TaskStep(
                    "charge",
                    queue="orders",
                    handler=Handler("charge", "1", idempotent=False),
                    input={"order_id": order_id, "amount": ref.input("amount")},
                )
            ],
        },
    )
    wf.task(
        "ship",
        queue="orders",
        handler=Handler("ship", "1"),
        input={"order_id": order_id, "reservation": ref.step("reserve").output()},
    )
    return wf


@dataclass
class DemoServer:
    """A running server: its base URL, the admin token and namespace of the demo."""

    base_url: str
    token: str
    namespace: str
    engine: Engine


@contextmanager
def running_server(database_url: str) -> Iterator[DemoServer]:
    """Serve ``create_app`` on a free loopback port in a background thread."""
    from weave_http.cli.serve import _bind  # the same listening socket set-up as serve

    engine = Engine.open(database_url)
    prepare_database(engine.db)
    create_namespace(engine.db, DEMO_NAMESPACE, actor="system:demo")
    token = create_token(engine.db, DEMO_NAMESPACE, [Permission.ADMIN], actor="system:demo")
    sock = _bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(engine, tick=True), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the demo server did not start")
        time.sleep(0.02)
    try:
        yield DemoServer(f"http://127.0.0.1:{port}", token, DEMO_NAMESPACE, engine)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        engine.close()


def run_demo(database_url: str | None, say: Callable[[str], None] = print) -> int:
    """Run the demo; return the process exit code."""
    with tempfile.TemporaryDirectory(prefix="weave-demo-") as tmp:
        url = database_url or f"sqlite:///{Path(tmp) / 'weave.db'}"
        with running_server(url) as srv:
            say(f"1. server listening on {srv.base_url} (database {url})")
            with Client(srv.base_url, token=srv.token, namespace=srv.namespace) as client:
                workflow = order_workflow()
                first = client.publish(workflow)
                say(
                    f"2. published {first.definition_id} v{first.version} "
                    f"(created={first.created}, content hash {first.content_hash[:12]}...)"
                )
                again = client.publish(workflow)
                say(f"3. published the same content again: created={again.created} (idempotent)")
                stored = client.get_definition(first.definition_id, "latest")
                same = stored.document == workflow.to_json()
                say(f"4. read back version {stored.version}: identical to the SDK's JSON: {same}")
                broken = workflow.to_json()
                broken["version"] = "2"
                broken["steps"][-1]["input"]["reservation"] = {"$ref": "steps.nowhere.output"}
                try:
                    client.publish(broken)
                except ValidationError as exc:
                    codes = ", ".join(f"{p.path}: {p.code}" for p in exc.problems)
                    say(f"5. a broken version 2 was refused with every problem listed: {codes}")
                else:
                    say("5. ERROR: the broken definition was accepted")
                    return 1
                if not same or first.created is not True or again.created is not False:
                    return 1
                with running_worker(srv):
                    say("6. a worker serves validate_order, manual_check, reserve_stock, charge, "
                        "ship")
                    if not _run_orders(client, say):
                        return 1
        say("demo finished: publish, validation, two orders run to SUCCEEDED through a worker")
    return 0


def order_worker(client: Client) -> Worker:
    """The demo's business handlers (a real deployment runs these in its own service)."""
    worker = Worker(client, queue="orders", concurrency=4, wait_seconds=1)

    @worker.handler("validate_order")
    def validate_order(data: dict[str, Any]) -> dict[str, bool]:
        return {"ok": data["amount"] > 0}

    @worker.handler("manual_check")
    def manual_check(data: dict[str, Any]) -> dict[str, str]:
        return {"checked_by": "demo-reviewer", "order_id": data["order_id"]}

    @worker.handler("reserve_stock")
    def reserve_stock(data: dict[str, Any]) -> dict[str, str]:
        return {"reservation": f"R-{data['order_id']}"}

    @worker.handler("charge", idempotent=False)
    def charge(data: dict[str, Any]) -> dict[str, Any]:
        return {"charged": data["amount"]}

    @worker.handler("ship")
    def ship(data: dict[str, Any]) -> dict[str, Any]:
        return {"shipped": data["order_id"], "with": data["reservation"]}

    return worker


@contextmanager
def running_worker(srv: DemoServer) -> Iterator[Worker]:
    """Run :func:`order_worker` in a thread for the duration of the block."""
    worker = order_worker(Client(srv.base_url, token=srv.token, namespace=srv.namespace))
    thread = threading.Thread(target=lambda: asyncio.run(worker.run_async()), daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.stop()
        thread.join(timeout=15)


def _run_orders(client: Client, say: Callable[[str], None]) -> bool:
    """Two orders whose exact amounts take different branches; both must succeed."""
    ok = True
    for number, (order_id, amount) in enumerate(
        (("A-1", Decimal("1000.00")), ("B-2", Decimal("1000.01"))), start=7
    ):
        handle = client.start("order-fulfilment", {"order_id": order_id, "amount": amount},
                              idempotency_key=f"demo-{order_id}")
        output = handle.result(timeout=60)
        view = handle.describe()
        phases = {s.step_id: s.phase for s in view.steps}
        history = handle.history()
        route = "manual check" if phases.get("manual_check") == "SUCCEEDED" else "no manual check"
        say(f"{number}. order {order_id} for {amount}: {view.status} ({route}), output {output}, "
            f"{len(history)} history entries")
        ok = ok and view.status == "SUCCEEDED"
    return ok


__all__ = ["DemoServer", "order_workflow", "run_demo", "running_server"]
