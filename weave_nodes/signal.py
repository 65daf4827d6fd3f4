"""The ``signal`` kind: wait durably for one matching signal; its payload is the output."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from weave_core.foundation.exactjson import JSON
from weave_core.planning.plan import PlanRejectedError, RejectReason
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
    WaitSignalCommand,
    hookimpl,
)
from weave_nodes._common import (
    ConfigModel,
    Name,
    PositiveInt,
    Version,
    check_at_most,
    check_correlation_key,
)


class SignalConfig(ConfigModel):
    name: Name
    correlation_key: Any
    """A non-empty literal string or a ``{"$ref": ...}`` to a string, frozen at activation."""
    param_version: Version = "1"
    timeout_seconds: PositiveInt | None = None
    """Give up waiting after this many seconds (the step then follows the failure policy)."""


SIGNAL_TIMED_OUT = "signal_timed_out"
"""Stable reason of a signal wait that reached its timeout (the failure policy follows)."""
UNEXPECTED_FACT = "unexpected_fact"
CORRELATION_KEY_MAX_LENGTH = 256


def freeze_correlation_key(scope: Scope, template: JSON) -> str:
    """Resolve a correlation key once, at activation: a non-empty string, or a rejection."""
    value = scope.resolve(template)
    if not isinstance(value, str):
        raise PlanRejectedError(
            RejectReason.TYPE_MISMATCH,
            f"correlation_key must resolve to a string, not {type(value).__name__}",
        )
    if not value:
        raise PlanRejectedError(
            RejectReason.EMPTY_CORRELATION_KEY, "correlation_key resolved to an empty string"
        )
    if len(value) > CORRELATION_KEY_MAX_LENGTH:
        raise PlanRejectedError(
            RejectReason.TYPE_MISMATCH,
            f"correlation_key is {len(value)} characters; at most "
            f"{CORRELATION_KEY_MAX_LENGTH} are allowed",
        )
    return value


class SignalKind(NodeKind):
    kind = "signal"
    config_model = SignalConfig

    def check(self, config: BaseModel, ctx: CheckContext) -> None:
        assert isinstance(config, SignalConfig)
        check_correlation_key(ctx, config.correlation_key, ".correlation_key")
        if config.timeout_seconds is not None:
            check_at_most(
                ctx,
                config.timeout_seconds,
                "max_deadline_seconds",
                ".timeout_seconds",
                "timeout_seconds",
            )

    def output_schema(
        self, config: BaseModel, block_outputs: Mapping[str, JsonSchema | None]
    ) -> JsonSchema | None:
        return None  # the signal's payload: any JSON value

    # run time

    def activate(self, config: BaseModel, scope: Scope) -> Command:
        """Wait for one signal: name, the correlation key frozen now, parameter version."""
        assert isinstance(config, SignalConfig)
        return WaitSignalCommand(
            name=config.name,
            correlation_key=freeze_correlation_key(scope, config.correlation_key),
            param_version=config.param_version,
            timeout_seconds=config.timeout_seconds,
        )

    def interpret(self, config: BaseModel, fact: Fact) -> StepResult:
        """The consumed signal's payload is the output; a timeout fails the step."""
        if fact.kind is FactKind.SIGNAL:
            return StepResult(StepOutcome.SUCCEEDED, output=fact.payload)
        if fact.kind is FactKind.TIMEOUT:
            return StepResult(StepOutcome.FAILED, reason=SIGNAL_TIMED_OUT)
        return StepResult(StepOutcome.NEEDS_REVIEW, reason=UNEXPECTED_FACT)


@hookimpl
def weave_register_node_kinds() -> list[type[NodeKind]]:
    return [SignalKind]


__all__ = [
    "SIGNAL_TIMED_OUT",
    "SignalConfig",
    "SignalKind",
    "freeze_correlation_key",
    "weave_register_node_kinds",
]
