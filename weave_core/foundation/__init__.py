"""The kernel's building blocks, which import no other part of it: the error tree, exact JSON
and its schemas, capacity limits, crash-test fault points and after-commit hooks."""
