"""Handlers as objects: ``wf.task(handler=ship)``, derived output schemas, input-model
checks against the template, the workflow's default queue (issue #14 item 1)."""

from __future__ import annotations

from decimal import Decimal

import pydantic

from tests.live_server import LiveServer
from weave_sdk import Client, Handler, TaskStep, Workflow, WorkflowNeedsReviewError, ref
from weave_sdk.contracts import INPUT_MODEL_MISMATCH
from weave_sdk.handlers import HandlerDef, handler
from weave_sdk.worker import Worker


class Order(pydantic.BaseModel):
    order_id: str
    amount: Decimal
    items: int = 1


class Priced(pydantic.BaseModel):
    order_id: str
    total: Decimal
    count: int


@handler("price", version="3")
def price(order: Order) -> Priced:
    return Priced(order_id=order.order_id, total=order.amount * 2, count=order.items)


@handler("charge", version="1", idempotent=False)
def charge(order: Order) -> dict[str, bool]:
    return {"charged": True}


def _workflow(definition_id: str = "priced") -> Workflow:
    wf = Workflow(definition_id, version="1", queue="pricing")
    wf.task("price", handler=price, input={"order_id": ref.input("id"),
                                           "amount": ref.input("amount")})
    wf.task("charge", handler=charge, queue="payments",
            input={"order_id": ref.input("id"), "amount": Decimal("1.10")})
    return wf


def test_a_decorated_handler_is_a_handler_and_stays_callable() -> None:
    assert isinstance(price, Handler) and isinstance(price, HandlerDef)
    assert price.to_json() == {"name": "price", "version": "3", "idempotent": True}
    assert charge.to_json() == {"name": "charge", "version": "1", "idempotent": False}
    assert price(Order(order_id="o", amount=Decimal("2.5"))).total == Decimal("5.0")


def test_definition_from_handler_objects_round_trips_with_exact_schema() -> None:
    document = _workflow().to_json()
    first, second = document["steps"]
    assert first["queue"] == "pricing" and second["queue"] == "payments"
    assert first["handler"] == {"name": "price", "version": "3", "idempotent": True}
    schema = first["output_schema"]
    assert schema["properties"]["total"] == {"title": "Total", "type": "number"}
    assert schema["properties"]["count"] == {"title": "Count", "type": "integer"}
    assert schema["required"] == ["order_id", "total", "count"]
    assert "output_schema" not in second  # a dict return type derives nothing
    assert Workflow.from_json(document).to_json() == document
    assert _workflow().validate() == []


def test_a_step_without_a_queue_needs_the_workflow_default() -> None:
    wf = Workflow("no-queue", version="1")
    wf.task("price", handler=price, input={"order_id": "o", "amount": 1})
    assert [p.code for p in wf.validate()] == ["missing_field"]
    nested = TaskStep("inner", handler=price, input={"order_id": "o", "amount": 1})
    wf2 = Workflow("nested", version="1", queue="q")
    wf2.parallel("both", {"a": [nested]})
    assert wf2.to_json()["steps"][0]["branches"]["a"][0]["queue"] == "q"


def test_the_input_model_is_checked_against_the_template() -> None:
    wf = Workflow("bad-input", version="1", queue="q")
    wf.task("missing", handler=price, input={"order_id": ref.input("id")})
    wf.task("wrong", handler=price, input={"order_id": "o", "amount": "lots"})
    wf.task("refs", handler=price, input={"order_id": ref.input("id"),
                                         "amount": ref.step("missing").output("x")})
    problems = [(p.path, p.code) for p in wf.validate()]
    assert problems == [("$.steps[0].input", INPUT_MODEL_MISMATCH),
                        ("$.steps[1].input.amount", INPUT_MODEL_MISMATCH)]
    assert "requires 'amount'" in wf.validate()[0].message


def test_published_handler_objects_run_and_the_schema_refuses_a_wrong_output(
    weave_server: LiveServer,
) -> None:
    base, token, ns = weave_server
    wf = Workflow("priced-live", version="1", queue="pricing",
                  input_schema={"type": "object"})
    wf.task("price", handler=price, input={"order_id": ref.input("id"),
                                           "amount": ref.input("amount")})
    liar = Worker(Client(base, token, ns), queue="pricing", wait_seconds=1)

    @liar.handler("price", version="3")
    def wrong(data: dict[str, object]) -> dict[str, object]:
        return {"order_id": data["order_id"], "total": "not a number", "count": 1}

    with Client(base, token, ns) as client:
        client.publish(wf)
        with Worker(client, queue="pricing", handlers=[price], wait_seconds=1).running():
            ok = client.start("priced-live", {"id": "o-1", "amount": Decimal("10.05")})
            assert ok.result(timeout=30) == {"order_id": "o-1", "total": Decimal("20.10"),
                                             "count": 1}
        with liar.running():
            bad = client.start("priced-live", {"id": "o-2", "amount": 1})
            try:
                bad.result(timeout=30)
            except WorkflowNeedsReviewError as exc:
                assert exc.review_reason == "output_contract_violated"
            else:
                raise AssertionError("a wrong output was accepted")
