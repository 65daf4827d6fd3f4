"""The ``parallel`` kind: run every named branch; the output is an object keyed by branch name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from weave_core.foundation.exactjson import JSON
from weave_core.plugins.nodespec import (
    CheckContext,
    Command,
    EnterBlocks,
    JsonSchema,
    NodeKind,
    Scope,
    hookimpl,
)
from weave_nodes._common import BlockName, ConfigModel


class ParallelConfig(ConfigModel):
    branches: dict[BlockName, list[Any]]
    """Branch name → its step list. Branch names are the keys of the step's output."""


class ParallelKind(NodeKind):
    """Block policy ``all``: every branch runs; the join is the step itself."""

    kind = "parallel"
    config_model = ParallelConfig
    block_policy = "all"

    def blocks(self, config: BaseModel) -> Mapping[str, Sequence[JSON]]:
        assert isinstance(config, ParallelConfig)
        return dict(config.branches)

    def block_path(self, config: BaseModel, block: str) -> str:
        return f".branches.{block}"

    def check(self, config: BaseModel, ctx: CheckContext) -> None:
        assert isinstance(config, ParallelConfig)
        if not config.branches:
            ctx.problem(".branches", "parallel_empty", "a parallel step needs at least one branch")
        for name, steps in config.branches.items():
            if not steps:
                ctx.problem(
                    f".branches.{name}",
                    "parallel_empty",
                    f"branch {name!r} has no steps, so it has no output to join",
                )
        width = ctx.limit("max_parallel_width")
        if len(config.branches) > width:
            ctx.problem(
                ".branches",
                "parallel_too_wide",
                f"{len(config.branches)} branches; the limit max_parallel_width is {width}",
            )

    def output_schema(
        self, config: BaseModel, block_outputs: Mapping[str, JsonSchema | None]
    ) -> JsonSchema | None:
        assert isinstance(config, ParallelConfig)
        properties: dict[str, JsonSchema] = {}
        for name in config.branches:
            declared = block_outputs.get(name)
            properties[name] = dict(declared) if declared is not None else {}
        return {
            "type": "object",
            "required": sorted(config.branches),
            "properties": properties,
            "additionalProperties": False,
        }

    # run time

    def activate(self, config: BaseModel, scope: Scope) -> Command:
        """Enter every branch; each sees only the data from before this step."""
        assert isinstance(config, ParallelConfig)
        return EnterBlocks(tuple(config.branches))

    def combine(self, config: BaseModel, decision: JSON, block_outputs: Mapping[str, JSON]) -> JSON:
        """An object keyed by branch name: each branch's last step output."""
        assert isinstance(config, ParallelConfig)
        return {name: block_outputs.get(name) for name in config.branches}


@hookimpl
def weave_register_node_kinds() -> list[type[NodeKind]]:
    return [ParallelKind]


__all__ = ["ParallelConfig", "ParallelKind", "weave_register_node_kinds"]
