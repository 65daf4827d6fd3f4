"""The ``timer`` kind: wait durably until a fixed number of seconds after activation."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel

from weave_core.plugins.nodespec import (
    CheckContext,
    Command,
    Fact,
    FactKind,
    JsonSchema,
    NodeKind,
    Scope,
    StepOutcome,
    StepResult,
    TimerCommand,
    hookimpl,
)
from weave_nodes._common import ConfigModel, PositiveInt, check_at_most


class TimerConfig(ConfigModel):
    seconds: PositiveInt


class TimerKind(NodeKind):
    kind = "timer"
    config_model = TimerConfig

    def check(self, config: BaseModel, ctx: CheckContext) -> None:
        assert isinstance(config, TimerConfig)
        check_at_most(ctx, config.seconds, "max_deadline_seconds", ".seconds", "seconds")

    def output_schema(
        self, config: BaseModel, block_outputs: Mapping[str, JsonSchema | None]
    ) -> JsonSchema | None:
        return {"type": "null"}

    # run time

    def activate(self, config: BaseModel, scope: Scope) -> Command:
        """A durable wait; the kernel saves the due time (database time) and holds no worker."""
        assert isinstance(config, TimerConfig)
        return TimerCommand(seconds=config.seconds)

    def interpret(self, config: BaseModel, fact: Fact) -> StepResult:
        if fact.kind is FactKind.TIMER:
            return StepResult(StepOutcome.SUCCEEDED, output=None)
        return StepResult(StepOutcome.NEEDS_REVIEW, reason="unexpected_fact")


@hookimpl
def weave_register_node_kinds() -> list[type[NodeKind]]:
    return [TimerKind]


__all__ = ["TimerConfig", "TimerKind", "weave_register_node_kinds"]
