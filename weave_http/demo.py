"""The demo scenario: a real server on a throw-away SQLite file, driven through the SDK.

``weave demo`` (and ``scripts/demo``) runs it. Each step prints what it did, so a new user
sees the product work end to end on the embedded default without any set-up.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import uvicorn

from weave_core.engine import Engine
from weave_core.identity import Permission, create_namespace, create_token
from weave_core.migrate import prepare_database
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

DEMO_NAMESPACE = "demo"


def order_workflow() -> Workflow:
    """An order: validate, route large amounts to a manual check, reserve and charge, ship."""
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
    server = uvicorn.Server(uvicorn.Config(create_app(engine), log_level="warning"))
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
        say("demo finished: publish, idempotent re-publish, read-back and validation all work")
    return 0


__all__ = ["DemoServer", "order_workflow", "run_demo", "running_server"]
