"""The ``task`` kind: run one named, versioned handler on a worker through the dispatch layer."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field

from weave_core.foundation.exactjson import JSON
from weave_core.foundation.exactschema import violations
from weave_core.planning.plan import PlanRejectedError, RejectReason
from weave_core.plugins.nodespec import (
    CheckContext,
    Command,
    Fact,
    FactKind,
    JsonSchema,
    NodeKind,
    RetryPolicy,
    Scope,
    StepOutcome,
    StepResult,
    TaskCommand,
    Timeouts,
    hookimpl,
)
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
    trace_key: Any = None
    """Optional template resolving to a string that ties the task to a business trace."""
    resource_key: Any = None
    """Optional template resolving to a string naming the business resource it touches."""


# Stable reasons of a task step's non-success outcomes (stored, shown, audited).
OUTPUT_CONTRACT_VIOLATED = "output_contract_violated"
TASK_FAILED = "task_failed"
TASK_CANCELLED = "task_cancelled"
TASK_NEEDS_REVIEW = "task_needs_review"
EFFECT_UNKNOWN = "effect_unknown"
UNEXPECTED_FACT = "unexpected_fact"
KEY_MAX_LENGTH = 256
"""Longest resolved trace or resource key."""


def resolve_key(scope: Scope, template: JSON, what: str) -> str | None:
    """Resolve an optional key template to a non-empty string (``None`` when absent)."""
    if template is None:
        return None
    value = scope.resolve(template)
    if not isinstance(value, str):
        raise PlanRejectedError(
            RejectReason.TYPE_MISMATCH,
            f"{what} must resolve to a string, not {type(value).__name__}",
        )
    if not value or len(value) > KEY_MAX_LENGTH:
        raise PlanRejectedError(
            RejectReason.TYPE_MISMATCH,
            f"{what} must resolve to 1 to {KEY_MAX_LENGTH} characters, not {len(value)}",
        )
    return value


def task_command(scope: Scope, config: TaskConfig) -> TaskCommand:
    """The dispatch task to persist for ``config``: parameters, never an execution permit."""
    retry, timeouts = config.retry, config.timeouts
    return TaskCommand(
        queue=config.queue,
        handler=config.handler.name,
        handler_version=config.handler.version,
        idempotent=config.handler.idempotent,
        input=scope.resolve(config.input),
        retry=RetryPolicy(
            max_attempts=retry.max_attempts,
            backoff_seconds=retry.backoff_seconds,
            backoff_multiplier=retry.backoff_multiplier,
            max_backoff_seconds=retry.max_backoff_seconds,
        ),
        timeouts=Timeouts(
            schedule_to_start=timeouts.schedule_to_start,
            start_to_close=timeouts.start_to_close,
            heartbeat=timeouts.heartbeat,
        ),
        trace_key=resolve_key(scope, config.trace_key, "trace_key"),
        resource_key=resolve_key(scope, config.resource_key, "resource_key"),
    )


def settle_task_fact(fact: Fact) -> StepResult | None:
    """What a non-success task fact means (``None`` for ``task.succeeded``)."""
    if fact.kind is FactKind.TASK_SUCCEEDED:
        return None
    if fact.kind is FactKind.TASK_CANCELLED:
        return StepResult(StepOutcome.CANCELLED, reason=TASK_CANCELLED)
    if fact.effect_unknown:
        return StepResult(StepOutcome.NEEDS_REVIEW, reason=EFFECT_UNKNOWN)
    if fact.kind is FactKind.TASK_FAILED:
        return StepResult(StepOutcome.FAILED, reason=TASK_FAILED)
    if fact.kind is FactKind.TASK_NEEDS_REVIEW:
        return StepResult(StepOutcome.NEEDS_REVIEW, reason=TASK_NEEDS_REVIEW)
    return StepResult(StepOutcome.NEEDS_REVIEW, reason=UNEXPECTED_FACT)


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
        for name in ("trace_key", "resource_key"):
            if getattr(config, name) is not None:
                ctx.check_template(getattr(config, name), f".{name}")
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

    # run time

    def activate(self, config: BaseModel, scope: Scope) -> Command:
        """One dispatch task: the resolved input (exact), keys, attempt budget, timeouts."""
        assert isinstance(config, TaskConfig)
        return task_command(scope, config)

    def interpret(self, config: BaseModel, fact: Fact) -> StepResult:
        """Success only when the result keeps the output contract; else failure or review."""
        assert isinstance(config, TaskConfig)
        settled = settle_task_fact(fact)
        if settled is not None:
            return settled
        if config.output_schema is not None and violations(config.output_schema, fact.payload):
            return StepResult(StepOutcome.NEEDS_REVIEW, reason=OUTPUT_CONTRACT_VIOLATED)
        return StepResult(StepOutcome.SUCCEEDED, output=fact.payload)


@hookimpl
def weave_register_node_kinds() -> list[type[NodeKind]]:
    return [TaskKind]


__all__ = [
    "EFFECT_UNKNOWN",
    "OUTPUT_CONTRACT_VIOLATED",
    "TASK_CANCELLED",
    "TASK_FAILED",
    "TASK_NEEDS_REVIEW",
    "UNEXPECTED_FACT",
    "Retry",
    "TaskConfig",
    "TaskKind",
    "TaskTimeouts",
    "resolve_key",
    "settle_task_fact",
    "task_command",
    "weave_register_node_kinds",
]
