"""Reliability tests on real ``weave serve`` processes: each test gets a database of its
own (engines killed in the middle leave due rows a shared database's other tests would
see), and engines that are stopped when it ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import migrated_database, opened_database
from tests.reliability.cluster import Engines
from weave_core.storage.db import Database


@pytest.fixture
def own_url() -> Iterator[str]:
    yield from migrated_database("weave_k")


@pytest.fixture
def own_db(own_url: str) -> Iterator[Database]:
    yield from opened_database(own_url)


@pytest.fixture
def engines(own_url: str) -> Iterator[Engines]:
    cluster = Engines(own_url)
    yield cluster
    cluster.stop()
