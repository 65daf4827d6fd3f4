"""The ``poll`` kind: a bounded repeated query of an external operation (R-7.4 to R-7.7)."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, Field, StringConstraints

from weave_core.foundation.errors import WeaveError
from weave_core.foundation.exactjson import JSON
from weave_core.plugins.nodespec import (
    CheckContext,
    Command,
    Fact,
    FactKind,
    JsonSchema,
    NodeKind,
    PollCommand,
    RetryPolicy,
    Scope,
    StepOutcome,
    StepResult,
    TaskCommand,
    WaitSignalCommand,
    hookimpl,
)
from weave_nodes._common import (
    ConfigModel,
    Handler,
    Name,
    PositiveInt,
    Version,
    check_at_most,
    check_correlation_key,
)
from weave_nodes.signal import freeze_correlation_key
from weave_nodes.task import settle_task_fact

StatusValue = str | int
"""A classified value of the result field: a string or an integer status."""


class Classify(ConfigModel):
    """How one round's result is read: the value of ``field`` decides; anything else is review."""

    field: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    pending: list[StatusValue] = Field(default_factory=list)
    succeeded: list[StatusValue] = Field(min_length=1)
    failed: list[StatusValue] = Field(default_factory=list)
    needs_review: list[StatusValue] = Field(default_factory=list)
    """Values that send the step to review (e.g. an operation the channel itself flagged)."""


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


class PollStatus(StrEnum):
    """What one successful query round says about the external operation (R-7.5)."""

    PENDING = "PENDING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    NEEDS_REVIEW = "NEEDS_REVIEW"


class PollClassificationError(WeaveError):
    """A round's result cannot be classified: wrong type, missing field or unknown value.

    Never success and never another round: the step goes to review (``poll_result_unclassified``).
    """

    code = "poll_result_unclassified"


# Stable reasons of a poll step's non-success outcomes.
POLL_RESULT_UNCLASSIFIED = "poll_result_unclassified"
POLL_RESULT_FAILED = "poll_result_failed"
POLL_RESULT_NEEDS_REVIEW = "poll_result_needs_review"
POLL_ROUND_FAILED = "poll_round_failed"
"""A round's own retry budget ran out (or it failed for good): review, never a new round."""
POLL_EXHAUSTED = "poll_exhausted"
"""Rounds or deadline exhausted while still PENDING: review with the last known result."""
UNEXPECTED_FACT = "unexpected_fact"


def classify_poll(config: PollConfig, result: JSON) -> PollStatus:
    """Classify one round's result by ``classify.field``; refuse what is not listed.

    The value must be a string or an integer (never a boolean or a decimal) and appear in one
    of the lists; anything else raises ``PollClassificationError``.
    """
    rules = config.classify
    if not isinstance(result, Mapping):
        raise PollClassificationError(
            f"a poll result is an object with {rules.field!r}, not {type(result).__name__}",
            details={"field": rules.field},
        )
    if rules.field not in result:
        raise PollClassificationError(
            f"the poll result has no field {rules.field!r}", details={"field": rules.field}
        )
    value = result[rules.field]
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise PollClassificationError(
            f"{rules.field} is a {type(value).__name__}; a status is a string or an integer",
            details={"field": rules.field},
        )
    for status, listed in (
        (PollStatus.PENDING, rules.pending),
        (PollStatus.SUCCEEDED, rules.succeeded),
        (PollStatus.FAILED, rules.failed),
        (PollStatus.NEEDS_REVIEW, rules.needs_review),
    ):
        # Same type and value: "1" is not 1.
        if any(type(item) is type(value) and item == value for item in listed):
            return status
    raise PollClassificationError(
        f"{rules.field}={value!r} is not a known status", details={"field": rules.field}
    )


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
        for group in ("pending", "succeeded", "failed", "needs_review"):
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

    # run time

    def activate(self, config: BaseModel, scope: Scope) -> Command:
        """The fixed query (handler, version, resolved input) and the optional receipt wait."""
        assert isinstance(config, PollConfig)
        receipt = None
        if config.receipt is not None:
            receipt = WaitSignalCommand(
                name=config.receipt.name,
                correlation_key=freeze_correlation_key(scope, config.receipt.correlation_key),
                param_version=config.receipt.param_version,
            )
        task = TaskCommand(
            queue=config.queue,
            handler=config.handler.name,
            handler_version=config.handler.version,
            idempotent=config.handler.idempotent,
            input=scope.resolve(config.input),
            retry=RetryPolicy(max_attempts=config.attempts_per_round),
        )
        return PollCommand(
            task=task,
            max_rounds=config.max_rounds,
            interval_seconds=config.interval_seconds,
            deadline_seconds=config.deadline_seconds,
            receipt=receipt,
        )

    def classify_poll(self, config: BaseModel, result: JSON) -> PollStatus:
        assert isinstance(config, PollConfig)
        return classify_poll(config, result)

    def interpret(self, config: BaseModel, fact: Fact) -> StepResult:
        """A round's result by its classification; a receipt completes the step."""
        assert isinstance(config, PollConfig)
        if fact.source == "receipt":
            if fact.kind is FactKind.SIGNAL:
                return StepResult(StepOutcome.SUCCEEDED, output=fact.payload)
            return StepResult(StepOutcome.NEEDS_REVIEW, reason=UNEXPECTED_FACT)
        if fact.kind is FactKind.TIMEOUT:
            return StepResult(StepOutcome.NEEDS_REVIEW, reason=POLL_EXHAUSTED)
        if fact.kind in (FactKind.SIGNAL, FactKind.TIMER):
            return StepResult(StepOutcome.NEEDS_REVIEW, reason=UNEXPECTED_FACT)
        settled = settle_task_fact(fact)
        if settled is not None:
            if settled.outcome is StepOutcome.FAILED:  # the round's budget is spent: review
                return StepResult(StepOutcome.NEEDS_REVIEW, reason=POLL_ROUND_FAILED)
            return settled
        try:
            status = classify_poll(config, fact.payload)
        except PollClassificationError:
            return StepResult(StepOutcome.NEEDS_REVIEW, reason=POLL_RESULT_UNCLASSIFIED)
        if status is PollStatus.PENDING:
            return StepResult(StepOutcome.CONTINUE, wake_after_seconds=config.interval_seconds)
        if status is PollStatus.SUCCEEDED:
            return StepResult(StepOutcome.SUCCEEDED, output=fact.payload)
        if status is PollStatus.FAILED:
            return StepResult(StepOutcome.FAILED, reason=POLL_RESULT_FAILED)
        return StepResult(StepOutcome.NEEDS_REVIEW, reason=POLL_RESULT_NEEDS_REVIEW)


@hookimpl
def weave_register_node_kinds() -> list[type[NodeKind]]:
    return [PollKind]


__all__ = [
    "POLL_EXHAUSTED",
    "POLL_RESULT_FAILED",
    "POLL_RESULT_NEEDS_REVIEW",
    "POLL_RESULT_UNCLASSIFIED",
    "POLL_ROUND_FAILED",
    "Classify",
    "PollClassificationError",
    "PollConfig",
    "PollKind",
    "PollStatus",
    "Receipt",
    "classify_poll",
    "weave_register_node_kinds",
]
