"""Re-exports :mod:`weave_core.plugins.nodespec` at its stable public path.

Plugin authors implement node kinds against it (docs/plugins.md). Kept when the kernel was
grouped into folders (#16); code inside the kernel imports
:mod:`weave_core.plugins.nodespec` itself.
"""

from weave_core.plugins.nodespec import (
    ENTRY_POINT_GROUP,
    NODE_SPEC_VERSION,
    PROJECT_NAME,
    BlockPolicy,
    CheckContext,
    Command,
    EnterBlocks,
    Fact,
    FactKind,
    JsonSchema,
    NodeKind,
    NodeSpec,
    PollCommand,
    RetryPolicy,
    Scope,
    StepOutcome,
    StepResult,
    TaskCommand,
    Timeouts,
    TimerCommand,
    WaitSignalCommand,
    hookimpl,
    hookspec,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "NODE_SPEC_VERSION",
    "PROJECT_NAME",
    "BlockPolicy",
    "CheckContext",
    "Command",
    "EnterBlocks",
    "Fact",
    "FactKind",
    "JsonSchema",
    "NodeKind",
    "NodeSpec",
    "PollCommand",
    "RetryPolicy",
    "Scope",
    "StepOutcome",
    "StepResult",
    "TaskCommand",
    "Timeouts",
    "TimerCommand",
    "WaitSignalCommand",
    "hookimpl",
    "hookspec",
]
