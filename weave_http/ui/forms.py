"""Reading the console's form posts: urlencoded only, bounded in size, one value per field.

Starlette's form parser needs an extra package for multipart; the console's forms are
small and urlencoded, so they are read here with the standard library, under the API's
body-size limit, before any field is looked at.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final
from urllib.parse import parse_qs

from starlette.requests import Request

from weave_core.foundation.errors import (
    BadRequestError,
    PayloadTooLargeError,
    Problem,
    UnsupportedMediaTypeError,
    ValidationError,
)
from weave_core.foundation.limits import Limits

FORM_TYPE: Final = "application/x-www-form-urlencoded"
MAX_FIELDS: Final = 64


class Form:
    """The fields of one post; every getter answers a 422 for a bad value, never a 500."""

    def __init__(self, fields: Mapping[str, str]) -> None:
        self._fields = dict(fields)

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._fields.get(name, default)

    def text(self, name: str, *, required: bool = True) -> str | None:
        value = (self._fields.get(name) or "").strip()
        if not value:
            if required:
                raise ValidationError(f"{name} is required",
                                      [Problem(f"$.{name}", "required", f"fill in {name}")])
            return None
        return value

    def integer(self, name: str) -> int:
        raw = (self._fields.get(name) or "").strip()
        if not raw.isascii() or not raw.isdigit() or len(raw) > 9:
            raise ValidationError(f"{name} must be a non-negative integer",
                                  [Problem(f"$.{name}", "invalid_field", "a whole number")])
        return int(raw)

    def items(self) -> list[tuple[str, str]]:
        return sorted(self._fields.items())


async def read_form(request: Request, limits: Limits) -> Form:
    """The urlencoded body (415 otherwise), at most ``max_body_bytes`` (413)."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != FORM_TYPE:
        raise UnsupportedMediaTypeError(f"forms are sent as {FORM_TYPE}")
    limit = limits.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLargeError("the form is too large", details={"limit_bytes": limit})
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > limit:
            raise PayloadTooLargeError("the form is too large", details={"limit_bytes": limit})
    try:
        text = body.decode("utf-8")
        parsed = parse_qs(text, keep_blank_values=True, strict_parsing=False,
                          max_num_fields=MAX_FIELDS, errors="strict")
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadRequestError("the form could not be read (bad encoding or too many fields)"
                              ) from exc
    fields: dict[str, str] = {}
    for name, values in parsed.items():
        if len(values) != 1:
            raise BadRequestError(f"the field {name!r} was sent more than once")
        fields[name] = values[0]
    return Form(fields)


__all__ = ["Form", "read_form"]
