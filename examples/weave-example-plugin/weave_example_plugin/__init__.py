"""An example third-party node kind: ``approval_email`` (node spec v1).

A step of this kind asks a worker (queue ``queue``, handler ``send_approval_email``) to send
an approval request to ``to`` and succeeds with ``{"message_id": "..."}``. Weave never sends
the mail itself (R-1.1): the kind only describes a task.

    {"id": "ask", "kind": "approval_email", "to": {"$ref": "input.approver"},
     "subject": "Approve job", "approvers_required": 1}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from weave_core.nodespec import (
    CheckContext,
    Command,
    Fact,
    FactKind,
    JsonSchema,
    NodeKind,
    Scope,
    StepOutcome,
    StepResult,
    TaskCommand,
    hookimpl,
)

HANDLER = "send_approval_email"
HANDLER_VERSION = "1"


class ApprovalEmailConfig(BaseModel):
    """The step's fields besides ``id`` and ``kind``."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    to: Any
    """The recipient: a literal address or a ``{"$ref": ...}`` to one."""
    subject: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    queue: str = "email"
    approvers_required: Annotated[int, Field(gt=0)] = 1


class ApprovalEmailKind(NodeKind):
    kind = "approval_email"
    config_model = ApprovalEmailConfig

    # publish time

    def check(self, config: BaseModel, ctx: CheckContext) -> None:
        assert isinstance(config, ApprovalEmailConfig)
        if isinstance(config.to, str):
            if "@" not in config.to:
                ctx.problem(".to", "invalid_field", f"{config.to!r} is not an e-mail address")
        else:
            ctx.check_template(config.to, ".to")
        if config.approvers_required > 10:
            ctx.problem(".approvers_required", "invalid_field", "at most 10 approvers")

    def output_schema(
        self, config: BaseModel, block_outputs: Mapping[str, JsonSchema | None]
    ) -> JsonSchema | None:
        return {
            "type": "object",
            "required": ["message_id"],
            "properties": {"message_id": {"type": "string"}},
        }

    # run time

    def activate(self, config: BaseModel, scope: Scope) -> Command:
        assert isinstance(config, ApprovalEmailConfig)
        return TaskCommand(
            queue=config.queue,
            handler=HANDLER,
            handler_version=HANDLER_VERSION,
            idempotent=True,
            input={
                "to": scope.resolve(config.to),
                "subject": config.subject,
                "approvers_required": config.approvers_required,
            },
        )

    def interpret(self, config: BaseModel, fact: Fact) -> StepResult:
        if fact.kind is FactKind.TASK_SUCCEEDED:
            return StepResult(StepOutcome.SUCCEEDED, output=fact.payload)
        if fact.kind is FactKind.TASK_CANCELLED:
            return StepResult(StepOutcome.CANCELLED)
        if fact.kind is FactKind.TASK_FAILED and not fact.effect_unknown:
            return StepResult(StepOutcome.FAILED, output=fact.payload, reason="email_failed")
        return StepResult(StepOutcome.NEEDS_REVIEW, reason="email_outcome_unknown")


@hookimpl
def weave_register_node_kinds() -> list[type[NodeKind]]:
    return [ApprovalEmailKind]


__all__ = ["ApprovalEmailConfig", "ApprovalEmailKind", "weave_register_node_kinds"]
