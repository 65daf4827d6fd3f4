"""The ``timer`` kind: wait durably until a fixed number of seconds after activation."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel

from weave_core.nodespec import CheckContext, JsonSchema, NodeKind, hookimpl
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


@hookimpl
def weave_register_node_kinds() -> list[type[NodeKind]]:
    return [TimerKind]


__all__ = ["TimerConfig", "TimerKind", "weave_register_node_kinds"]
