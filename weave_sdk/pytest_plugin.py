"""The ``workflow_env`` pytest fixture (``weave-sdk[testing]``).

Enable it in a ``conftest.py`` with ``pytest_plugins = ["weave_sdk.pytest_plugin"]``; each
test that asks for ``workflow_env`` gets a started :class:`~weave_sdk.testing.
WorkflowEnvironment` on a SQLite file in its ``tmp_path``, closed after the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from weave_sdk.testing import WorkflowEnvironment


@pytest.fixture
def workflow_env(tmp_path: Path) -> Iterator[WorkflowEnvironment]:
    """A running in-process engine with a namespace and token; add workers to it."""
    with WorkflowEnvironment(database_url=f"sqlite:///{tmp_path / 'weave.db'}") as env:
        yield env


__all__ = ["workflow_env"]
