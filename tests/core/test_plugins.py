"""The plugin host: entry points, the typed facade, and broken plugins refused by name."""

from __future__ import annotations

import ast
import re
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from weave_core.definitions.format import validate_definition
from weave_core.foundation.errors import PluginError, ValidationError
from weave_core.foundation.limits import Limits
from weave_core.plugins import host as plugins_module
from weave_core.plugins.host import PluginHost
from weave_core.plugins.nodespec import NodeKind, NodeSpec, hookimpl
from weave_nodes.task import TaskConfig

ROOT = Path(__file__).resolve().parents[2]
BUILT_IN = {"task", "signal", "timer", "poll", "branch", "parallel"}


class _Config(BaseModel):
    pass


def _kind(name: str, **attrs: Any) -> type[NodeKind]:
    return type(f"K_{name}", (NodeKind,), {"kind": name, "config_model": _Config, **attrs})


class _Plugin:
    """A test plugin object: ``weave_register_node_kinds`` returns ``kinds``."""

    def __init__(self, name: str, kinds: list[Any]) -> None:
        self.__name__ = name
        self._kinds = kinds

    @hookimpl
    def weave_register_node_kinds(self) -> list[Any]:
        return self._kinds


class BadHookName:
    """Misspelled hook (singular): must fail loudly, never be ignored."""

    __name__ = "bad-hook-plugin"

    @hookimpl
    def weave_register_node_kind(self) -> list[type[NodeKind]]:
        return [_kind("never_seen")]


class UnmarkedBadHook:
    """A misspelled ``weave_*`` function without the marker is caught too."""

    __name__ = "unmarked-bad-hook-plugin"

    def weave_register_nodes(self) -> list[type[NodeKind]]:
        return []


def test_built_in_kinds_come_from_entry_points() -> None:
    host = PluginHost.from_entry_points()
    assert BUILT_IN <= set(host.kinds())
    for name in BUILT_IN:
        assert host.plugin_of(name) == f"weave-engine:{name} (weave_nodes.{name})"
        kind = host.kind(name)
        assert isinstance(kind, NodeKind) and kind.kind == name
    assert host.kind("nope") is None


def test_pyproject_registers_one_entry_point_per_built_in_module() -> None:
    text = (ROOT / "pyproject.toml").read_text("utf-8")
    section = text.split('[project.entry-points."weave.nodes"]', 1)[1].split("\n[", 1)[0]
    found = dict(re.findall(r'^(\w+) = "([\w.]+)"', section, re.M))
    assert found == {name: f"weave_nodes.{name}" for name in BUILT_IN}


def test_weave_core_never_imports_weave_nodes() -> None:
    offenders = []
    for path in (ROOT / "weave_core").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "weave_nodes"]
    assert offenders == []


def test_the_example_plugin_is_discovered_and_usable() -> None:
    host = PluginHost.from_entry_points()
    assert host.plugin_of("approval_email").startswith("weave-example-plugin:approval_email")
    doc: dict[str, Any] = {
        "schema_version": 1,
        "definition_id": "ask",
        "version": "1",
        "input_schema": {"type": "object", "properties": {"approver": {"type": "string"}}},
        "steps": [
            {
                "id": "ask",
                "kind": "approval_email",
                "to": {"$ref": "input.approver"},
                "subject": "Approve job",
            },
            {
                "id": "after",
                "kind": "signal",
                "name": "approved",
                "correlation_key": {"$ref": "steps.ask.output.message_id"},
            },
        ],
    }
    validated = validate_definition(doc, host, Limits())
    assert validated.step("ask").kind == "approval_email"
    doc["steps"][1]["correlation_key"] = {"$ref": "steps.ask.output.msg_id"}
    doc["steps"][0]["to"] = "not-an-address"
    with pytest.raises(ValidationError) as caught:
        validate_definition(doc, host, Limits())
    codes = {(p.path, p.code) for p in caught.value.problems}
    assert codes == {
        ("$.steps[0].to", "invalid_field"),
        ("$.steps[1].correlation_key", "ref_unknown_field"),
    }


def test_extra_plugins_add_kinds_to_one_host_only() -> None:
    host = PluginHost.from_entry_points([_Plugin("extra", [_kind("extra_kind")])])
    other = PluginHost.from_entry_points()
    assert host.plugin_of("extra_kind") == "extra"
    assert other.kind("extra_kind") is None


def test_a_misspelled_hook_is_refused_by_plugin_name() -> None:
    with pytest.raises(PluginError) as caught:
        PluginHost.from_entry_points([BadHookName()])
    message = str(caught.value)
    assert "bad-hook-plugin" in message and "weave_register_node_kind" in message
    assert caught.value.details["plugin"] == "bad-hook-plugin"


def test_an_unmarked_misspelled_hook_is_refused() -> None:
    with pytest.raises(PluginError, match="unmarked-bad-hook-plugin"):
        PluginHost.from_entry_points([UnmarkedBadHook()])


def test_a_duplicate_kind_is_refused_naming_both_plugins() -> None:
    class Task2(NodeKind):
        kind = "task"
        config_model = TaskConfig

    with pytest.raises(PluginError) as caught:
        PluginHost.from_entry_points([_Plugin("dup-task-plugin", [Task2])])
    message = str(caught.value)
    assert "dup-task-plugin" in message and "'task'" in message
    assert "weave_nodes.task" in message
    assert caught.value.details["kind"] == "task"


@pytest.mark.parametrize(
    ("returned", "fragment"),
    [
        ([object], "not a subclass"),
        ([type("NoKind", (NodeKind,), {"config_model": _Config})], "must set 'kind'"),
        ([type("NoModel", (NodeKind,), {"kind": "no_model"})], "config_model"),
        ([_kind("future", spec_version=2)], "spec v2"),
        ([_kind("Bad-Name")], "must set 'kind'"),
        ([_kind("weird", block_policy="some")], "block_policy"),
        ("task", "must return a list"),
    ],
)
def test_malformed_kinds_are_refused(returned: Any, fragment: str) -> None:
    with pytest.raises(PluginError) as caught:
        PluginHost.from_plugins([("broken-plugin", _Plugin("broken-plugin", returned))])
    assert "broken-plugin" in str(caught.value) and fragment in str(caught.value)


def test_an_entry_point_that_fails_to_import_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = EntryPoint(name="ghost", value="weave_no_such_module_xyz", group="weave.nodes")
    monkeypatch.setattr(plugins_module, "entry_points", lambda group: [broken])
    with pytest.raises(PluginError, match=r"ghost \(weave_no_such_module_xyz\)"):
        PluginHost.from_entry_points()


def test_every_hookspec_is_documented() -> None:
    """docs/plugins.md has a section per hook, with its signature (datasette's docs test)."""
    text = (ROOT / "docs" / "plugins.md").read_text("utf-8")
    hooks = [name for name in dir(NodeSpec) if name.startswith("weave_")]
    assert hooks
    for name in hooks:
        assert re.search(rf"^#+ `?{name}\(", text, re.M), f"docs/plugins.md lacks a {name} section"


def test_every_node_kind_method_is_documented() -> None:
    text = (ROOT / "docs" / "plugins.md").read_text("utf-8")
    methods = ["blocks", "block_path", "check", "output_schema", "activate", "interpret", "combine"]
    for name in methods:
        assert f"`{name}(" in text, name
