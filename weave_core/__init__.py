"""Weave kernel: storage, identity, dispatch, runtime and the node plugin spec."""
