"""The ``signal`` kind: wait durably for one matching signal; its payload is the output."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from weave_core.nodespec import CheckContext, JsonSchema, NodeKind, hookimpl
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


@hookimpl
def weave_register_node_kinds() -> list[type[NodeKind]]:
    return [SignalKind]


__all__ = ["SignalConfig", "SignalKind", "weave_register_node_kinds"]
