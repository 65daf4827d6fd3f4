"""JSON Schema (Draft 2020-12) over exact values, importable by pure code (node kinds, core).

The one implementation is ``weave_sdk.exactschema`` (the SDK checks definitions locally
with the same type rules); this module keeps the engine's import path.
"""

from __future__ import annotations

from weave_sdk.exactschema import ExactValidator, violations

__all__ = ["ExactValidator", "violations"]
