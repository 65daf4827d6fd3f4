"""docs/sdk.md is tested: its ``python`` blocks run here, its reference tables are complete.

Blocks marked ``python live`` need a server; ``test_client_live.py`` runs them after the
offline blocks, through ``run_blocks(live=True)``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import weave_sdk
from weave_sdk import PROBLEM_CODES, errors

DOC = Path(__file__).resolve().parents[2] / "docs" / "sdk.md"
_BLOCK = re.compile(r"^```python( live)?\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks() -> list[tuple[bool, str]]:
    """(is_live, code) of every python block, in page order."""
    return [(bool(m.group(1)), m.group(2)) for m in _BLOCK.finditer(DOC.read_text())]


def run_blocks(*, live: bool, definition_id: str | None = None) -> dict[str, Any]:
    """Run the offline blocks (and the live ones when ``live``) in one namespace.

    ``definition_id`` replaces the example's id, so that live runs on a shared server do
    not collide with each other.
    """
    namespace: dict[str, Any] = {"__name__": "docs_sdk"}
    for is_live, code in blocks():
        if is_live and not live:
            continue
        if definition_id is not None:
            code = code.replace('"external-job"', repr(definition_id))
        exec(compile(code, f"{DOC}:python{' live' if is_live else ''}", "exec",
                     dont_inherit=True), namespace)  # no future import: pydantic resolves hints
    return namespace


def test_offline_examples_run() -> None:
    namespace = run_blocks(live=False)
    assert isinstance(namespace["wf"], weave_sdk.Workflow)


def test_the_page_has_offline_and_live_examples() -> None:
    kinds = [is_live for is_live, _ in blocks()]
    assert kinds.count(False) >= 4 and kinds.count(True) >= 3


def test_every_problem_code_is_documented() -> None:
    text = DOC.read_text()
    missing = [code for code in PROBLEM_CODES if f"| `{code}` |" not in text]
    assert missing == []


def test_every_error_class_is_documented() -> None:
    text = DOC.read_text()
    names = [n for n in errors.__all__ if n.endswith("Error") and n != "WeaveSDKError"]
    assert [n for n in names if f"`{n}`" not in text] == []


def test_every_client_method_is_documented() -> None:
    text = DOC.read_text()
    methods = [n for n in vars(weave_sdk.Client) if not n.startswith("_") and n != "close"]
    public = [n for n in methods if callable(getattr(weave_sdk.Client, n))]
    assert [m for m in public if f"`{m}(" not in text] == []
