"""The ``poll`` kind: a bounded repeated query of an external operation (R-7.4 to R-7.7)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, Field, StringConstraints

from weave_core.nodespec import CheckContext, JsonSchema, NodeKind, hookimpl
from weave_nodes._common import (
    ConfigModel,
    Handler,
    Name,
    PositiveInt,
    Version,
    check_at_most,
    check_correlation_key,
)

StatusValue = str | int
"""A classified value of the result field: a string or an integer status."""


class Classify(ConfigModel):
    """How one round's result is read: the value of ``field`` decides; anything else is review."""

    field: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    pending: list[StatusValue] = Field(default_factory=list)
    succeeded: list[StatusValue] = Field(min_length=1)
    failed: list[StatusValue] = Field(default_factory=list)


class Receipt(ConfigModel):
    """A final receipt signal that may complete the step instead of a poll round."""

    name: Name
    correlation_key: Any
    param_version: Version = "1"


class PollConfig(ConfigModel):
    queue: Name
    handler: Handler
    input: Any = Field(default_factory=dict)
    max_rounds: PositiveInt
    interval_seconds: PositiveInt
    """Counted from the end of the previous round."""
    deadline_seconds: PositiveInt
    """From activation; no round or retry is authorised after it."""
    attempts_per_round: PositiveInt = 1
    classify: Classify
    receipt: Receipt | None = None


class PollKind(NodeKind):
    kind = "poll"
    config_model = PollConfig

    def check(self, config: BaseModel, ctx: CheckContext) -> None:
        assert isinstance(config, PollConfig)
        ctx.check_template(config.input, ".input")
        max_rounds = ctx.limit("max_poll_rounds")
        if config.max_rounds > max_rounds:
            ctx.problem(
                ".max_rounds",
                "poll_budget_too_large",
                f"max_rounds is {config.max_rounds}; the limit max_poll_rounds is {max_rounds}",
            )
        total = config.max_rounds * config.attempts_per_round
        max_total = ctx.limit("max_poll_attempts_total")
        if total > max_total:
            ctx.problem(
                "",
                "poll_budget_too_large",
                f"max_rounds x attempts_per_round is {total}; the limit "
                f"max_poll_attempts_total is {max_total}",
            )
        check_at_most(
            ctx,
            config.attempts_per_round,
            "max_task_attempts",
            ".attempts_per_round",
            "attempts_per_round",
        )
        check_at_most(
            ctx,
            config.deadline_seconds,
            "max_deadline_seconds",
            ".deadline_seconds",
            "deadline_seconds",
        )
        if config.interval_seconds > config.deadline_seconds:
            ctx.problem(
                ".interval_seconds",
                "invalid_field",
                "interval_seconds is longer than deadline_seconds: no second round could run",
            )
        seen: dict[tuple[type, StatusValue], str] = {}
        for group in ("pending", "succeeded", "failed"):
            for index, value in enumerate(getattr(config.classify, group)):
                key = (type(value), value)
                if key in seen:
                    ctx.problem(
                        f".classify.{group}[{index}]",
                        "invalid_field",
                        f"{value!r} is already listed in classify.{seen[key]}: the lists "
                        "must be disjoint",
                    )
                else:
                    seen[key] = group
        if config.receipt is not None:
            check_correlation_key(ctx, config.receipt.correlation_key, ".receipt.correlation_key")

    def output_schema(
        self, config: BaseModel, block_outputs: Mapping[str, JsonSchema | None]
    ) -> JsonSchema | None:
        return None  # the last round's result or the receipt's payload


@hookimpl
def weave_register_node_kinds() -> list[type[NodeKind]]:
    return [PollKind]


__all__ = ["Classify", "PollConfig", "PollKind", "Receipt", "weave_register_node_kinds"]
