"""The order flow of docs/quickstart.md: handlers (``handlers``), the workflow (``flow``),
the worker (``worker``) and their tests (``test_orders``)."""
