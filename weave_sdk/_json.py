"""Old home of the SDK's exact JSON, kept so existing imports work: see ``exactjson``."""

from __future__ import annotations

from weave_sdk.exactjson import JSON as JSON
from weave_sdk.exactjson import MAX_DEPTH, JSONDecodeError, check_exact, dumps, loads

__all__ = ["JSON", "MAX_DEPTH", "JSONDecodeError", "check_exact", "dumps", "loads"]
