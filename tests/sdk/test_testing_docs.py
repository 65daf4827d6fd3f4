"""docs/testing.md is tested: its ``python`` blocks run here, in order, in one namespace;
the fixture block runs as a test with the real ``workflow_env`` fixture."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from weave_sdk.testing import WorkflowEnvironment

pytest_plugins = ["weave_sdk.pytest_plugin"]

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _run() -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "docs_testing"}
    for code in _BLOCK.findall(DOC.read_text()):
        exec(compile(code, f"{DOC}:python", "exec", dont_inherit=True), namespace)
    return namespace


def test_the_examples_run(workflow_env: WorkflowEnvironment) -> None:
    namespace = _run()
    blocks = _BLOCK.findall(DOC.read_text())
    assert len(blocks) >= 3
    namespace["test_delivery"](workflow_env)  # the fixture example, with the real fixture
    assert namespace["polls"] == ["T-2", "T-2", "T-2"]
