"""The ``task`` kind: run one named, versioned handler on a worker through the dispatch layer."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field

from weave_core.nodespec import CheckContext, JsonSchema, NodeKind, hookimpl
from weave_nodes._common import (
    ConfigModel,
    ExactNumber,
    Handler,
    Name,
    PositiveInt,
    check_at_most,
)


class Retry(ConfigModel):
    """The dispatch layer's attempt budget and backoff (seconds, exact numbers)."""

    max_attempts: PositiveInt = 3
    backoff_seconds: ExactNumber = Decimal(1)
    backoff_multiplier: ExactNumber = Decimal(2)
    max_backoff_seconds: ExactNumber = Decimal(300)


class TaskTimeouts(ConfigModel):
    """Dispatch timeouts in whole seconds; absent means the engine default."""

    schedule_to_start: PositiveInt | None = None
    start_to_close: PositiveInt | None = None
    heartbeat: PositiveInt | None = None


class TaskConfig(ConfigModel):
    queue: Name
    handler: Handler
    input: Any = Field(default_factory=dict)
    """A value template: JSON with ``{"$ref": ...}`` values, resolved at activation."""
    output_schema: dict[str, Any] | None = None
    """JSON Schema (2020-12) of the handler's result: the output contract."""
    retry: Retry = Field(default_factory=Retry)
    timeouts: TaskTimeouts = Field(default_factory=TaskTimeouts)


def check_output_schema(schema: Mapping[str, Any] | None, ctx: CheckContext, path: str) -> None:
    """An output contract must itself be a valid JSON Schema (Draft 2020-12)."""
    if schema is None:
        return
    for error in Draft202012Validator(Draft202012Validator.META_SCHEMA).iter_errors(schema):
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        ctx.problem(f"{path}{where}", "output_schema_invalid", error.message)


class TaskKind(NodeKind):
    """Create one dispatch task; its result (checked against ``output_schema``) is the output."""

    kind = "task"
    config_model = TaskConfig

    def check(self, config: BaseModel, ctx: CheckContext) -> None:
        assert isinstance(config, TaskConfig)
        ctx.check_template(config.input, ".input")
        check_output_schema(config.output_schema, ctx, ".output_schema")
        check_at_most(
            ctx,
            config.retry.max_attempts,
            "max_task_attempts",
            ".retry.max_attempts",
            "retry.max_attempts",
        )
        if config.retry.max_backoff_seconds < config.retry.backoff_seconds:
            ctx.problem(
                ".retry.max_backoff_seconds",
                "invalid_field",
                "max_backoff_seconds must not be below backoff_seconds",
            )
        if config.retry.backoff_multiplier < 1:
            ctx.problem(
                ".retry.backoff_multiplier", "invalid_field", "backoff_multiplier must be >= 1"
            )
        for name in ("schedule_to_start", "start_to_close", "heartbeat"):
            value = getattr(config.timeouts, name)
            if value is not None:
                check_at_most(ctx, value, "max_deadline_seconds", f".timeouts.{name}", name)

    def output_schema(
        self, config: BaseModel, block_outputs: Mapping[str, JsonSchema | None]
    ) -> JsonSchema | None:
        assert isinstance(config, TaskConfig)
        return config.output_schema


@hookimpl
def weave_register_node_kinds() -> list[type[NodeKind]]:
    return [TaskKind]


__all__ = ["Retry", "TaskConfig", "TaskKind", "TaskTimeouts", "weave_register_node_kinds"]
