"""Re-exports :mod:`weave_core.definitions.expressions` at its stable public path.

Plugin authors check references and conditions with it. Kept when the kernel was grouped
into folders (#16); code inside the kernel imports :mod:`weave_core.definitions.expressions`
itself.
"""

from weave_core.definitions.expressions import (
    BINARY_OPERATORS,
    OPERATORS,
    ORDERING_OPERATORS,
    REF_KEY,
    ExpressionError,
    ExpressionTypeError,
    Lookup,
    MissingValueError,
    Need,
    Ref,
    RefUse,
    ValueTooLargeError,
    compare,
    condition_refs,
    evaluate,
    follow,
    is_ref,
    json_equal,
    parse_ref,
    resolve,
    template_refs,
)

__all__ = [
    "BINARY_OPERATORS",
    "OPERATORS",
    "ORDERING_OPERATORS",
    "REF_KEY",
    "ExpressionError",
    "ExpressionTypeError",
    "Lookup",
    "MissingValueError",
    "Need",
    "Ref",
    "RefUse",
    "ValueTooLargeError",
    "compare",
    "condition_refs",
    "evaluate",
    "follow",
    "is_ref",
    "json_equal",
    "parse_ref",
    "resolve",
    "template_refs",
]
