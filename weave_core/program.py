"""Re-exports :mod:`weave_core.planning.program` at its stable public path.

Tools compile definitions with ``compile`` (docs/decision-core.md). Kept when the kernel was
grouped into folders (#16); code inside the kernel imports
:mod:`weave_core.planning.program` itself.
"""

from weave_core.planning.program import (
    ROOT_BLOCK,
    Program,
    compile,
)

__all__ = [
    "ROOT_BLOCK",
    "Program",
    "compile",
]
