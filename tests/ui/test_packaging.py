"""The console's templates and static files ship inside the wheel (package data), so an
installed ``weave serve`` needs no checkout and no build step."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

import weave_http

ROOT = Path(__file__).resolve().parents[2]


def test_every_template_and_static_file_is_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["weave_http"]
    ui = Path(weave_http.__file__).parent / "ui"
    files = [p.relative_to(ui.parent).as_posix()
             for folder in ("templates", "static") for p in (ui / folder).iterdir()]
    assert len(files) >= 15 and any(f.endswith(".css") for f in files)
    missing = [f for f in files if not any(fnmatch(f, pattern) for pattern in patterns)]
    assert missing == []
    assert "jinja2>=3.1" in config["project"]["dependencies"]
