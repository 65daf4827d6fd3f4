"""``weave_bench`` sits on top of the engine: nothing in it imports the harness except the
``weave bench`` command, when it runs, so no other command (nor ``weave --help``) loads it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE_PACKAGES = ("weave_core", "weave_nodes", "weave_http")
LAZY_LOADER = ROOT / "weave_http" / "cli" / "bench.py"
"""The one module allowed to import ``weave_bench``: inside the command's function only."""


def _imports_of_bench(nodes: list[ast.stmt] | list[ast.AST]) -> list[int]:
    lines = []
    for node in nodes:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        if any(n.split(".")[0] == "weave_bench" for n in names):
            lines.append(node.lineno)
    return lines


def _runtime_top_level(tree: ast.Module) -> list[ast.stmt]:
    """Module-level statements, without ``if TYPE_CHECKING:`` blocks (never run)."""
    return [node for node in tree.body
            if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                    and node.test.id == "TYPE_CHECKING")]


def test_the_engine_packages_import_weave_bench_only_lazily() -> None:
    offenders: list[str] = []
    for package in ENGINE_PACKAGES:
        for source in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(source.read_text(), str(source))
            nodes = _runtime_top_level(tree) if source == LAZY_LOADER else list(ast.walk(tree))
            offenders += [f"{source.relative_to(ROOT)}:{n}" for n in _imports_of_bench(nodes)]
    assert offenders == []


@pytest.mark.parametrize(("argv", "loaded"), [
    (["--help"], False),
    (["serve", "--help"], False),
    (["migrate", "--help"], False),
    (["bench", "--help"], False),
    (["bench", "--list", "--json"], True),
])
def test_only_a_running_weave_bench_loads_the_harness(argv: list[str], loaded: bool) -> None:
    probe = ("import json, sys\nfrom weave_http.cli import main\n"
             "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
             "print(json.dumps(sorted(m for m in sys.modules if m.startswith('weave_bench'))))")
    result = subprocess.run([sys.executable, "-c", probe, *argv],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    modules = json.loads(result.stdout.splitlines()[-1])
    assert bool(modules) is loaded, modules
