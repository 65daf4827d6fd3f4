"""Pages: the Jinja2 environment (autoescape on), filters, and the headers every page has.

Templates and static files ship inside ``weave_http`` (package data); nothing is fetched
from the network, and the Content-Security-Policy allows only this origin, so a page can
load no script, style or image from anywhere else.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from starlette.responses import HTMLResponse

from weave_core.foundation.exactjson import JSON
from weave_http.ui.jsonview import pretty

HERE: Final = Path(__file__).parent
STATIC_DIR: Final = HERE / "static"

SECURITY_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


def _json(value: JSON) -> str:
    return pretty(value)


def age(value: str | None, now: datetime | None = None) -> str:
    """``2025-01-31T12:00:00.000000Z`` as "3 min" (how long ago), "" for none."""
    if not value:
        return ""
    then = datetime.fromisoformat(value.replace("Z", "+00:00"))
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    if seconds < 0:
        return "just now"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def short_time(value: str | None) -> str:
    """``2025-01-31T12:00:00.123456Z`` as ``2025-01-31 12:00:00`` (UTC)."""
    return "" if not value else value.replace("T", " ")[:19]


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(["html"], default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["json"] = _json
    env.filters["age"] = age
    env.filters["time"] = short_time
    return env


ENV: Final = _environment()


def page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """A rendered page with the console's security headers."""
    context.setdefault("session", None)
    context.setdefault("nav", "")
    html = ENV.get_template(template).render(**context)
    return HTMLResponse(html, status_code=status, headers=dict(SECURITY_HEADERS))


__all__ = ["SECURITY_HEADERS", "STATIC_DIR", "age", "page", "short_time"]
