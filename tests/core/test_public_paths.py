"""The stable public paths kept when the kernel was grouped into folders (#16).

Plugin authors, tools, migrations and ``weave_sdk.testing`` import these; each must
re-export its module's public names as the very same objects.
"""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest

PUBLIC_PATHS = {
    "weave_core.errors": "weave_core.foundation.errors",
    "weave_core.exactjson": "weave_core.foundation.exactjson",
    "weave_core.nodespec": "weave_core.plugins.nodespec",
    "weave_core.expressions": "weave_core.definitions.expressions",
    "weave_core.plan": "weave_core.planning.plan",
    "weave_core.program": "weave_core.planning.program",
    "weave_core.db": "weave_core.storage.db",
    "weave_core.schema": "weave_core.storage.schema",
    "weave_core.migrate": "weave_core.storage.migrate",
    "weave_core.identity": "weave_core.access.identity",
}


def _defined(source: str) -> list[str]:
    """The public names a module defines itself (not those it imports)."""
    names: list[str] = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [n for n in names if not n.startswith("_")]


@pytest.mark.parametrize(("public", "home"), sorted(PUBLIC_PATHS.items()))
def test_a_public_path_re_exports_its_module(public: str, home: str) -> None:
    shim, module = importlib.import_module(public), importlib.import_module(home)
    names = _defined(inspect.getsource(module))
    assert names
    for name in names:
        assert getattr(shim, name, None) is getattr(module, name), f"{public}.{name}"


def test_the_documented_imports_work() -> None:
    from weave_core.db import Database, savepoint, set_clock_offset
    from weave_core.exactjson import JSON
    from weave_core.nodespec import NodeKind, hookimpl
    from weave_core.program import compile

    assert all((Database, savepoint, set_clock_offset, JSON, NodeKind, hookimpl, compile))
