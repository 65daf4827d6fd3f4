"""The tests of examples/orders, collected with the suite (issue #14 item 7)."""

from examples.orders.test_orders import (  # noqa: F401  collected by pytest
    env,
    test_a_large_order_waits_for_its_approval,
    test_a_small_order_is_delivered,
    test_a_warehouse_outage_goes_to_review_and_is_recovered,
    test_handlers_are_plain_functions_too,
)
