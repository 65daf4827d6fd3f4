"""The core end-to-end scenarios on SQLite: one ``weave serve`` process, SDK workers."""

from __future__ import annotations

from tests.e2e import scenarios
from tests.e2e.conftest import E2E


def test_sequence_on_sqlite(sqlite_e2e: E2E) -> None:
    scenarios.sequence(sqlite_e2e)


def test_branch_on_sqlite(sqlite_e2e: E2E) -> None:
    scenarios.branch_on_decimal(sqlite_e2e)


def test_parallel_on_sqlite(sqlite_e2e: E2E) -> None:
    scenarios.parallel_join(sqlite_e2e)


def test_nested_on_sqlite(sqlite_e2e: E2E) -> None:
    scenarios.nested(sqlite_e2e)


def test_failure_to_review_on_sqlite(sqlite_e2e: E2E) -> None:
    scenarios.failure_to_review(sqlite_e2e)
