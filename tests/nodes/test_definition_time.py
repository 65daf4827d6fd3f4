"""The definition-time half of the six built-in kinds: configs, blocks, output schemas."""

from __future__ import annotations

import importlib
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from weave_core.foundation import exactjson
from weave_core.plugins.nodespec import NodeKind
from weave_nodes.branch import BranchConfig, BranchKind
from weave_nodes.parallel import ParallelConfig, ParallelKind
from weave_nodes.poll import PollConfig
from weave_nodes.signal import SignalConfig
from weave_nodes.task import TaskConfig, TaskKind
from weave_nodes.timer import TimerConfig, TimerKind

HANDLER = {"name": "h", "version": "1"}


@pytest.mark.parametrize("name", ["task", "signal", "timer", "poll", "branch", "parallel"])
def test_each_module_registers_exactly_its_kind(name: str) -> None:
    module = importlib.import_module(f"weave_nodes.{name}")
    kinds = module.weave_register_node_kinds()
    assert len(kinds) == 1 and issubclass(kinds[0], NodeKind) and kinds[0].kind == name
    assert kinds[0].config_model.model_config.get("extra") == "forbid"


def test_task_config_defaults_and_exact_numbers() -> None:
    config = TaskConfig.model_validate(
        {"queue": "jobs", "handler": HANDLER, "retry": {"backoff_multiplier": Decimal("1.5")}}
    )
    assert config.handler.idempotent is True
    assert config.input == {}
    assert config.retry.max_attempts == 3
    assert config.retry.backoff_multiplier == Decimal("1.5")
    assert config.retry.backoff_seconds == 1 and isinstance(config.retry.backoff_seconds, Decimal)
    assert config.timeouts.heartbeat is None


@pytest.mark.parametrize(
    ("model", "fields"),
    [
        (TaskConfig, {"queue": "q", "handler": HANDLER, "retry": {"max_attempts": 2.0}}),
        (TaskConfig, {"queue": "q", "handler": HANDLER, "retry": {"max_attempts": True}}),
        (TaskConfig, {"queue": "q", "handler": {**HANDLER, "idempotent": "yes"}}),
        (TaskConfig, {"queue": "q", "handler": HANDLER, "retry": {"backoff_seconds": 0.5}}),
        (TaskConfig, {"queue": "", "handler": HANDLER}),
        (TaskConfig, {"queue": "q", "handler": {"name": "h", "version": 1}}),
        (TimerConfig, {"seconds": Decimal("2")}),
        (TimerConfig, {"seconds": 0}),
        (SignalConfig, {"name": "s", "correlation_key": "k", "timeout_seconds": -1}),
        (SignalConfig, {"name": "s", "correlation_key": "k", "param_version": 1}),
        (BranchConfig, {"cases": [{"steps": []}]}),
        (BranchConfig, {"cases": [{"when": True, "default": True, "steps": []}]}),
        (BranchConfig, {"cases": [{"default": False, "steps": []}]}),
        (ParallelConfig, {"branches": {"bad-name": []}}),
        (
            PollConfig,
            {
                "queue": "q",
                "handler": HANDLER,
                "max_rounds": 1,
                "interval_seconds": 1,
                "deadline_seconds": 10,
                "classify": {"field": "s", "succeeded": []},
            },
        ),
    ],
)
def test_strict_configs_refuse(model: type[BaseModel], fields: dict[str, Any]) -> None:
    with pytest.raises(PydanticValidationError):
        model.model_validate(fields)


# DESIGN.md section 2 names these fields: they are a public contract and never renamed.
DESIGN_FIELDS: dict[type[BaseModel], set[str]] = {
    TaskConfig: {"queue", "handler", "input", "output_schema", "retry", "timeouts"},
    SignalConfig: {"name", "correlation_key", "param_version", "timeout_seconds"},
    TimerConfig: {"seconds"},
    PollConfig: {
        "queue",
        "handler",
        "input",
        "max_rounds",
        "interval_seconds",
        "deadline_seconds",
        "attempts_per_round",
        "classify",
        "receipt",
    },
    BranchConfig: {"cases"},
    ParallelConfig: {"branches"},
}

# Fields the kinds add ("kinds may add fields"); each is documented in docs/definitions.md.
EXTENSIONS: dict[type[BaseModel], set[str]] = {TaskConfig: {"trace_key", "resource_key"}}


@pytest.mark.parametrize("model", list(DESIGN_FIELDS), ids=lambda m: m.__name__)
def test_design_field_names(model: type[BaseModel]) -> None:
    """Every DESIGN field exists; anything beyond it is a deliberate, listed extension."""
    fields = set(model.model_fields)
    assert DESIGN_FIELDS[model] <= fields
    assert fields - DESIGN_FIELDS[model] == EXTENSIONS.get(model, set())


def test_extensions_are_documented() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "definitions.md").read_text()
    for names in EXTENSIONS.values():
        for name in names:
            assert f"`{name}`" in text, name


def test_branch_blocks_are_named_by_case_index() -> None:
    config = BranchConfig.model_validate(
        {"cases": [{"when": True, "steps": [{"id": "x"}]}, {"default": True, "steps": []}]}
    )
    kind = BranchKind()
    assert kind.block_policy == "one"
    assert dict(kind.blocks(config)) == {"case0": [{"id": "x"}], "case1": []}
    assert kind.block_path(config, "case1") == ".cases[1].steps"
    assert kind.output_schema(config, {}) is None


def test_parallel_blocks_and_output_schema() -> None:
    config = ParallelConfig.model_validate(
        {"branches": {"docs": [{"id": "a"}], "quote": [{"id": "b"}]}}
    )
    kind = ParallelKind()
    assert kind.block_policy == "all"
    assert list(kind.blocks(config)) == ["docs", "quote"]
    assert kind.block_path(config, "quote") == ".branches.quote"
    schema = kind.output_schema(config, {"docs": {"type": "string"}, "quote": None})
    assert schema == {
        "type": "object",
        "required": ["docs", "quote"],
        "properties": {"docs": {"type": "string"}, "quote": {}},
        "additionalProperties": False,
    }


def test_leaf_output_schemas() -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    task = TaskConfig.model_validate({"queue": "q", "handler": HANDLER, "output_schema": schema})
    assert TaskKind().output_schema(task, {}) == schema
    assert TimerKind().output_schema(TimerConfig(seconds=1), {}) == {"type": "null"}


def test_exact_json_input_reaches_the_config_unchanged() -> None:
    fields = exactjson.loads(
        b'{"queue": "q", "handler": {"name": "h", "version": "1"},'
        b' "input": {"big": 9007199254740993, "small": 1e-400}}'
    )
    config = TaskConfig.model_validate(fields)
    assert config.input["big"] == 9007199254740993
    assert config.input["small"] == Decimal("1e-400")
