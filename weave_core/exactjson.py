"""Re-exports :mod:`weave_core.foundation.exactjson` at its stable public path.

Plugin authors type values with ``JSON``. Kept when the kernel was grouped into folders
(#16); code inside the kernel imports :mod:`weave_core.foundation.exactjson` itself.
"""

from weave_core.foundation.exactjson import (
    DEFAULT_MAX_DEPTH,
    JSON,
    MAX_NUMBER_DIGITS,
    canonical_number,
    canonicalize,
    content_hash,
    depth,
    dumps,
    loads,
    loads_stored,
    size_of,
)

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "JSON",
    "MAX_NUMBER_DIGITS",
    "canonical_number",
    "canonicalize",
    "content_hash",
    "depth",
    "dumps",
    "loads",
    "loads_stored",
    "size_of",
]
