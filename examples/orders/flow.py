"""The order workflow: validate → large orders wait for an approval → reserve stock and
charge the card in parallel → a packing window (timer) → ship → poll the carrier.

``weave publish examples.orders.flow:order_flow`` publishes it.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from examples.orders.handlers import (
    carrier_status,
    charge_card,
    reserve_stock,
    ship_order,
    validate_order,
)
from weave_sdk import Case, Classify, Default, SignalStep, TaskStep, Workflow, gt, ref

APPROVAL_LIMIT = Decimal("1000.00")
"""Orders above this amount wait for a person's approval (the ``approval`` signal)."""

order_id = ref.input("order_id")

order_flow = Workflow(
    "orders",
    version="1",
    queue="orders",
    input_schema={
        "type": "object",
        "required": ["order_id", "sku", "quantity", "amount"],
        "properties": {"order_id": {"type": "string"}, "sku": {"type": "string"},
                       "quantity": {"type": "integer"}, "amount": {"type": "number"}},
    },
    deadline=timedelta(days=7),
)
order_flow.task("validate", handler=validate_order, input={
    "order_id": order_id, "sku": ref.input("sku"), "quantity": ref.input("quantity"),
    "amount": ref.input("amount")})
order_flow.branch("approval_needed", [
    Case(gt(ref.input("amount"), APPROVAL_LIMIT), [
        SignalStep("approval", name="approval", correlation_key=order_id,
                   timeout=timedelta(days=1)),
    ]),
    Default([]),
])
reserve = TaskStep("reserve", handler=reserve_stock, input={
    "order_id": order_id, "sku": ref.input("sku"), "quantity": ref.input("quantity")})
order_flow.parallel("prepare", {
    "stock": [reserve],
    "payment": [TaskStep("charge", handler=charge_card,
                         input={"order_id": order_id, "amount": ref.input("amount")})],
})
order_flow.timer("packing", duration=timedelta(seconds=3))
ship = order_flow.task("ship", handler=ship_order, input={
    "order_id": order_id, "reservation_id": reserve.output("reservation_id")})
order_flow.poll(
    "delivery", handler=carrier_status, input={"tracking": ship.output("tracking")},
    max_rounds=20, interval=timedelta(seconds=2), deadline=timedelta(hours=1),
    classify=Classify("status", pending=["IN_TRANSIT"], succeeded=["DELIVERED"],
                      failed=["LOST"]),
)
