"""docs/http-api.md lists every served operation with its permission (#12 item 11)."""

from __future__ import annotations

import re
from pathlib import Path

from weave_http.routes import all_api_routes

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "http-api.md"
_ROW = re.compile(r"^\| `(GET|POST|PUT|PATCH|DELETE) (/\S+)` \| (none|`([a-z]+)`) \|")


def _documented() -> list[tuple[str, str, str | None]]:
    rows = []
    for line in API_DOC.read_text().splitlines():
        match = _ROW.match(line)
        if match:
            rows.append((match.group(1), match.group(2), match.group(4)))
    return rows


def test_the_route_table_is_the_served_one() -> None:
    served = [(r.method, r.path, None if r.permission is None else r.permission.value)
              for r in all_api_routes()]
    documented = _documented()
    assert len(documented) == len(set(documented)), "a route is listed twice"
    assert sorted(documented) == sorted(served)


def test_the_docs_stand_alone() -> None:
    """No document of docs/ sends its reader to the specification files."""
    docs = API_DOC.parent
    cited = [f"{path.relative_to(docs)}:{n}" for path in sorted(docs.rglob("*.md"))
             for n, line in enumerate(path.read_text().splitlines(), start=1)
             if re.search(r"DESIGN(\.md)?\b|RELIABILITY\.md|BENCHMARKS\.md", line)]
    assert cited == []
