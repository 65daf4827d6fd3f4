"""Node kinds as plugins: the spec v1 they implement and the host that loads them."""
