"""The ``weave-sdk`` distribution stands alone: no engine imports, installable by itself."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

SDK_DIR = Path(__file__).resolve().parents[2] / "weave_sdk"
ENGINE_PACKAGES = ("weave_core", "weave_nodes", "weave_http", "weave_bench", "migrations")
LAZY_ENGINE = ("testing.py",)
"""Modules of the ``testing`` extra: they import the engine inside functions only, when an
environment starts, so that importing them never needs it."""


def test_sdk_sources_import_nothing_from_the_engine() -> None:
    offenders: list[str] = []
    for source in sorted(SDK_DIR.glob("*.py")):
        tree = ast.parse(source.read_text(), str(source))
        nodes = tree.body if source.name in LAZY_ENGINE else list(ast.walk(tree))
        for node in nodes:
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [
                f"{source.name}: {n}" for n in names if n.split(".")[0] in ENGINE_PACKAGES
            ]
    assert offenders == []


CHECK_SCRIPT = textwrap.dedent(
    """
    import importlib.util, sys
    from decimal import Decimal
    import weave_sdk
    from weave_sdk import Handler, Workflow, dumps, ref, validate

    wf = Workflow("wf", version="1", input_schema={}, failure_policy="REVIEW")
    wf.task("t", queue="q", handler=Handler("h", "1"), input={"x": ref.input("x"),
            "p": Decimal("1.10")})
    assert validate(wf) == [], validate(wf)
    assert '"p":1.10' in dumps(wf.to_json())
    client = weave_sdk.Client("http://127.0.0.1:9", "t", "ns")
    client.close()
    engine = [m for m in sys.modules if m.split(".")[0] in {"weave_core", "weave_nodes",
              "weave_http", "migrations"}]
    assert engine == [], engine
    assert importlib.util.find_spec("weave_core") is None, "the engine is installed here"
    from weave_sdk.testing import WorkflowEnvironment   # importable without the extra
    try:
        WorkflowEnvironment().start()
    except weave_sdk.ConfigurationError as exc:
        assert "weave-sdk[testing]" in str(exc), exc
    else:
        raise AssertionError("started without the engine")
    print("ok", weave_sdk.__version__, weave_sdk.__file__)
    """
)


def test_wheel_installs_and_imports_without_the_engine(tmp_path: Path) -> None:
    # Build from a copy, so that the build leaves nothing behind in the checkout.
    source = tmp_path / "weave_sdk"
    shutil.copytree(
        SDK_DIR, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(source)],
        check=True,
        capture_output=True,
        timeout=240,
    )
    (wheel,) = dist.glob("weave_sdk-0.1.0-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert "weave_sdk/py.typed" in names
    assert "weave_sdk/client.py" in names
    assert not [n for n in names if n.split("/")[0] in (*ENGINE_PACKAGES, "tests")]
    assert "weave_sdk/testing.py" in names and "weave_sdk/pytest_plugin.py" in names
    with zipfile.ZipFile(wheel) as archive:
        (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = archive.read(meta).decode()
    required = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert "Provides-Extra: testing" in metadata
    assert 'Requires-Dist: weave-engine==0.1.0; extra == "testing"' in required, required
    assert [r for r in required if "extra" not in r] == [
        "Requires-Dist: httpx>=0.27", "Requires-Dist: jsonschema>=4.21",
        "Requires-Dist: pydantic<3,>=2.7"], required
    assert "weave_sdk/definition.schema.json" in names

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)],
        check=True,
        capture_output=True,
        timeout=240,
    )
    # -I: isolated mode, so neither the checkout nor PYTHONPATH can leak the engine in.
    result = subprocess.run(
        [str(python), "-I", "-c", CHECK_SCRIPT],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.startswith("ok 0.1.0 ")
    assert str(venv) in result.stdout
