"""JSON for people, still exact: indented, keys sorted, every number spelled as stored.

``json.dumps(indent=2)`` would turn a ``Decimal`` into a float first; here scalars are
written by ``exactjson.dumps`` (the canonical, exact spelling) and only the layout is ours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from weave_core.foundation import exactjson
from weave_core.foundation.exactjson import JSON


def pretty(value: JSON, indent: int = 2) -> str:
    """The value laid out on lines; ``exactjson.loads`` of it equals the value."""
    out: list[str] = []
    _write(value, out, 0, indent)
    return "".join(out)


def _write(value: JSON, out: list[str], level: int, indent: int) -> None:
    pad = " " * (indent * (level + 1))
    end = " " * (indent * level)
    if isinstance(value, Mapping) and value:
        out.append("{\n")
        for index, key in enumerate(sorted(value)):
            out.append(f"{pad}{exactjson.dumps(key)}: ")
            _write(value[key], out, level + 1, indent)
            out.append(",\n" if index < len(value) - 1 else "\n")
        out.append(end + "}")
    elif isinstance(value, Sequence) and not isinstance(value, str) and value:
        out.append("[\n")
        for index, item in enumerate(value):
            out.append(pad)
            _write(item, out, level + 1, indent)
            out.append(",\n" if index < len(value) - 1 else "\n")
        out.append(end + "]")
    else:
        out.append(exactjson.dumps(value))


__all__ = ["pretty"]
