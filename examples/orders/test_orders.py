"""The order flow's own tests: real engine, real worker, skipped time (weave_sdk.testing).

Run them with ``pytest examples/orders`` (the repository's suite also collects them).
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import pytest

from examples.orders import handlers
from examples.orders.flow import order_flow
from weave_sdk import NonRetryableError, WorkflowNeedsReviewError, WorkflowStatus
from weave_sdk.testing import WorkflowEnvironment


@pytest.fixture
def env() -> Iterator[WorkflowEnvironment]:
    with WorkflowEnvironment(handlers.HANDLERS, queue="orders") as env:
        env.client.publish(order_flow)
        yield env


def order(order_id: str, amount: str, sku: str = "tea") -> dict[str, object]:
    return {"order_id": order_id, "sku": sku, "quantity": 2, "amount": Decimal(amount)}


def test_a_small_order_is_delivered(env: WorkflowEnvironment) -> None:
    assert env.run("orders", order("A-1", "250.00")) == {"status": "DELIVERED"}


def test_a_large_order_waits_for_its_approval(env: WorkflowEnvironment) -> None:
    handle = env.client.start("orders", order("B-2", "1000.01"))
    env.sleep(60)  # an hour would do too: the approval waits up to a day
    assert handle.describe().status is WorkflowStatus.WAITING
    handle.signal("approval", correlation_key="B-2", payload={"approved_by": "ops"})
    assert env.result(handle) == {"status": "DELIVERED"}
    charged = handle.describe().step("charge").output
    assert charged == {"charge_id": "C-B-2", "amount": Decimal("1000.01")}


def test_a_warehouse_outage_goes_to_review_and_is_recovered(env: WorkflowEnvironment) -> None:
    handlers.WAREHOUSE_OUTAGES.add("backordered-tea")
    handle = env.client.start("orders", order("C-3", "40.00", sku="backordered-tea"))
    with pytest.raises(WorkflowNeedsReviewError) as raised:
        env.result(handle)
    assert raised.value.step_id == "reserve"
    assert raised.value.error_type == "warehouse_unavailable"
    handlers.WAREHOUSE_OUTAGES.discard("backordered-tea")
    handle.recover("reserve", reason="the warehouse is back")
    assert env.result(handle) == {"status": "DELIVERED"}


def test_handlers_are_plain_functions_too() -> None:
    verdict = handlers.validate_order(handlers.Order(order_id="D-4", sku="tea", quantity=1,
                                                     amount=Decimal("9.99")))
    assert verdict.ok is True
    with pytest.raises(NonRetryableError):
        handlers.validate_order(handlers.Order(order_id="E-5", sku="tea", quantity=0,
                                               amount=Decimal("1")))
