"""The order flow's business code: one ``@handler`` per task, typed with pydantic models.

The same objects are named by the workflow (``flow.py``) and run by the worker
(``worker.py``): a handler's name, version and idempotency are written once, here, and the
return models become the steps' output schemas (amounts stay exact ``Decimal``).
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path

import pydantic

from weave_sdk import NonRetryableError, handler


class Order(pydantic.BaseModel):
    order_id: str
    sku: str
    quantity: int
    amount: Decimal


class Verdict(pydantic.BaseModel):
    ok: bool
    order_id: str


class Reservation(pydantic.BaseModel):
    reservation_id: str


class ReserveRequest(pydantic.BaseModel):
    order_id: str
    sku: str
    quantity: int


class ChargeRequest(pydantic.BaseModel):
    order_id: str
    amount: Decimal


class Charge(pydantic.BaseModel):
    charge_id: str
    amount: Decimal


class ShipRequest(pydantic.BaseModel):
    order_id: str
    reservation_id: str


class Shipment(pydantic.BaseModel):
    tracking: str


class TrackingRequest(pydantic.BaseModel):
    tracking: str


class CarrierStatus(pydantic.BaseModel):
    status: str


WAREHOUSE_OUTAGES: set[str] = set()
"""SKUs the warehouse cannot reserve right now (tests add to it); an order of one goes to
review. The warehouse also reads the file ``$ORDERS_OUTAGES`` (default ``outages.txt`` in
the working directory), one SKU a line, as docs/quickstart.md does."""


def _outages() -> set[str]:
    path = Path(os.environ.get("ORDERS_OUTAGES", "outages.txt"))
    try:
        listed = {line.strip() for line in path.read_text().splitlines()}
    except OSError:
        listed = set()
    return WAREHOUSE_OUTAGES | (listed - {""})
_CARRIER_ROUNDS: dict[str, int] = {}


@handler("validate_order")
def validate_order(order: Order) -> Verdict:
    if order.quantity < 1 or order.amount <= 0:
        raise NonRetryableError(f"order {order.order_id} has nothing to sell",
                                type="invalid_order")
    return Verdict(ok=True, order_id=order.order_id)


@handler("reserve_stock")
def reserve_stock(request: ReserveRequest) -> Reservation:
    if request.sku in _outages():
        raise NonRetryableError(f"the warehouse cannot reserve {request.sku}",
                                type="warehouse_unavailable")
    return Reservation(reservation_id=f"R-{request.order_id}")


@handler("charge_card", idempotent=False)
def charge_card(request: ChargeRequest) -> Charge:
    return Charge(charge_id=f"C-{request.order_id}", amount=request.amount)


@handler("ship_order")
def ship_order(request: ShipRequest) -> Shipment:
    return Shipment(tracking=f"T-{request.order_id}")


@handler("carrier_status")
def carrier_status(request: TrackingRequest) -> CarrierStatus:
    """The carrier reports the parcel in transit once, then delivered."""
    seen = _CARRIER_ROUNDS[request.tracking] = _CARRIER_ROUNDS.get(request.tracking, 0) + 1
    return CarrierStatus(status="DELIVERED" if seen >= 2 else "IN_TRANSIT")


HANDLERS = [validate_order, reserve_stock, charge_card, ship_order, carrier_status]
