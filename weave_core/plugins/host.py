"""The plugin host: one per engine, loads node kinds from ``weave.nodes`` and refuses broken ones.

The host is built once per :class:`~weave_core.engine.Engine` (never a module-level global).
Every installed distribution exposing the entry point group ``weave.nodes`` is loaded and
registered with a pluggy manager for project ``weave`` and the hookspecs of
:class:`~weave_core.plugins.nodespec.NodeSpec`; the built-in kinds of ``weave_nodes`` arrive the
same way, through the entry points of the ``weave-engine`` distribution.

Any attribute of a plugin whose name starts with ``weave_`` is taken as a hook
implementation, marked or not, so that ``check_pending()`` catches a misspelled hook
(``weave_register_node_kind``) instead of ignoring it. A plugin is refused with a
:class:`~weave_core.foundation.errors.PluginError` naming it when its hooks are unknown or
malformed,
when it returns something that is not a well-formed ``NodeKind`` subclass, when a kind is
written for a spec version this host does not serve, or when it registers a kind that
another plugin already registered: a second registration never silently wins.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping, Sequence
from importlib.metadata import EntryPoint, entry_points
from types import MappingProxyType
from typing import Any

import pluggy
from pydantic import BaseModel

from weave_core.foundation.errors import PluginError
from weave_core.plugins.nodespec import (
    ENTRY_POINT_GROUP,
    NODE_SPEC_VERSION,
    PROJECT_NAME,
    NodeKind,
    NodeSpec,
)

SERVED_SPEC_VERSIONS: frozenset[int] = frozenset({NODE_SPEC_VERSION})
"""The node spec versions this host can load kinds for."""

HOOK_PREFIX = "weave_"
ENGINE_DISTRIBUTION = "weave-engine"
KIND_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
"""A ``kind`` string: lower case, digits and underscores, starting with a letter."""

_BLOCK_POLICIES = ("none", "all", "one")


class _Manager(pluggy.PluginManager):
    """A pluggy manager that treats every ``weave_*`` attribute as a hook implementation."""

    def parse_hookimpl_opts(self, plugin: object, name: str) -> Any:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith(HOOK_PREFIX):
            method = getattr(plugin, name, None)
            if inspect.isroutine(method):
                # An unmarked ``weave_*`` function is meant as a hook: register it so that
                # check_pending() reports it when no spec has that name.
                return {}
        return opts


def _plugin_name(plugin: object) -> str:
    name = getattr(plugin, "__name__", None)
    if isinstance(name, str) and name:
        return name
    return type(plugin).__qualname__


def _entry_point_name(ep: EntryPoint) -> str:
    dist = ep.dist.name if ep.dist is not None else None
    prefix = f"{dist}:" if dist else ""
    return f"{prefix}{ep.name} ({ep.value})"


class PluginHost:
    """The node kinds one engine serves, and which plugin provided each.

    Build it with :meth:`from_entry_points` (the installed plugins) or :meth:`from_plugins`
    (explicit plugin objects, e.g. in tests). Instances are immutable after construction and
    safe to share across threads.
    """

    def __init__(
        self,
        manager: pluggy.PluginManager,
        kinds: Mapping[str, NodeKind],
        owners: Mapping[str, str],
    ) -> None:
        self._pm = manager
        self._kinds: Mapping[str, NodeKind] = MappingProxyType(dict(kinds))
        self._owners: Mapping[str, str] = MappingProxyType(dict(owners))

    # --- construction ----------------------------------------------------------------

    @classmethod
    def from_entry_points(
        cls, extra_plugins: Sequence[object] = (), *, group: str = ENTRY_POINT_GROUP
    ) -> PluginHost:
        """Load every plugin installed under ``group``, plus ``extra_plugins``, in that order."""
        loaded: list[tuple[str, object]] = []

        # The engine's own kinds first, so a third-party clash is blamed on the third party.
        def order(ep: EntryPoint) -> tuple[bool, str, str]:
            return (ep.dist is None or ep.dist.name != ENGINE_DISTRIBUTION, ep.name, ep.value)

        for ep in sorted(entry_points(group=group), key=order):
            name = _entry_point_name(ep)
            try:
                plugin = ep.load()
            except Exception as exc:
                raise PluginError(
                    f"node plugin {name} cannot be loaded: {type(exc).__name__}: {exc}",
                    details={"plugin": name},
                ) from exc
            loaded.append((name, plugin))
        loaded.extend((_plugin_name(p), p) for p in extra_plugins)
        return cls.from_plugins(loaded)

    @classmethod
    def from_plugins(cls, plugins: Sequence[tuple[str, object]]) -> PluginHost:
        """Register ``(name, plugin)`` pairs in order and collect their kinds."""
        pm = _Manager(PROJECT_NAME)
        pm.add_hookspecs(NodeSpec)
        for name, plugin in plugins:
            cls._register(pm, name, plugin)
        kinds: dict[str, NodeKind] = {}
        owners: dict[str, str] = {}
        for impl in pm.hook.weave_register_node_kinds.get_hookimpls():
            name = impl.plugin_name
            try:
                returned = impl.function()
            except Exception as exc:
                raise PluginError(
                    f"node plugin {name}: weave_register_node_kinds() raised "
                    f"{type(exc).__name__}: {exc}",
                    details={"plugin": name},
                ) from exc
            if not isinstance(returned, list | tuple):
                raise PluginError(
                    f"node plugin {name}: weave_register_node_kinds() must return a list of "
                    f"NodeKind subclasses, not {type(returned).__name__}",
                    details={"plugin": name},
                )
            for kind_class in returned:
                instance = cls._checked_kind(name, kind_class)
                if instance.kind in kinds:
                    raise PluginError(
                        f"node plugin {name} registers kind {instance.kind!r}, which plugin "
                        f"{owners[instance.kind]} already registered",
                        details={
                            "plugin": name,
                            "kind": instance.kind,
                            "registered_by": owners[instance.kind],
                        },
                    )
                kinds[instance.kind] = instance
                owners[instance.kind] = name
        return cls(pm, kinds, owners)

    @staticmethod
    def _register(pm: pluggy.PluginManager, name: str, plugin: object) -> None:
        try:
            pm.register(plugin, name=name)
        except ValueError as exc:  # pluggy: the name or the object is already registered
            raise PluginError(
                f"node plugin {name} is registered twice: {exc}", details={"plugin": name}
            ) from exc
        except pluggy.PluginValidationError as exc:
            raise PluginError(
                f"node plugin {name} is invalid: {exc}", details={"plugin": name}
            ) from exc
        try:
            pm.check_pending()
        except pluggy.PluginValidationError as exc:
            hooks = sorted(
                attr
                for attr in dir(plugin)
                if attr.startswith(HOOK_PREFIX) and not hasattr(NodeSpec, attr)
            )
            raise PluginError(
                f"node plugin {name} implements unknown hook(s) {', '.join(hooks) or '?'}: "
                f"spec v{NODE_SPEC_VERSION} has "
                f"{', '.join(a for a in dir(NodeSpec) if a.startswith(HOOK_PREFIX))}",
                details={"plugin": name, "unknown_hooks": hooks},
            ) from exc

    @staticmethod
    def _checked_kind(plugin: str, kind_class: object) -> NodeKind:
        def refuse(message: str, kind: str | None = None) -> PluginError:
            details: dict[str, Any] = {"plugin": plugin}
            if kind is not None:
                details["kind"] = kind
            return PluginError(f"node plugin {plugin}: {message}", details=details)

        if not (isinstance(kind_class, type) and issubclass(kind_class, NodeKind)):
            raise refuse(f"{kind_class!r} is not a subclass of weave_core.nodespec.NodeKind")
        label = kind_class.__qualname__
        kind = getattr(kind_class, "kind", None)
        if not isinstance(kind, str) or not KIND_NAME.match(kind):
            raise refuse(f"{label} must set 'kind' to a string matching {KIND_NAME.pattern}")
        model = getattr(kind_class, "config_model", None)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise refuse(
                f"kind {kind!r} ({label}) must set 'config_model' to a pydantic model", kind
            )
        version = kind_class.spec_version
        if version not in SERVED_SPEC_VERSIONS:
            raise refuse(
                f"kind {kind!r} is written for node spec v{version}; this engine serves "
                f"v{', v'.join(map(str, sorted(SERVED_SPEC_VERSIONS)))}",
                kind,
            )
        if kind_class.block_policy not in _BLOCK_POLICIES:
            raise refuse(f"kind {kind!r} has block_policy {kind_class.block_policy!r}", kind)
        try:
            return kind_class()
        except Exception as exc:
            raise refuse(f"kind {kind!r} cannot be instantiated: {exc}", kind) from exc

    # --- the typed facade ------------------------------------------------------------

    def kind(self, name: str) -> NodeKind | None:
        """The kind serving ``name``, or ``None`` when no plugin provides it."""
        return self._kinds.get(name)

    def kinds(self) -> Mapping[str, NodeKind]:
        """Every kind, by name (read-only)."""
        return self._kinds

    def plugin_of(self, kind: str) -> str:
        """The name of the plugin that registered ``kind``; ``KeyError`` for an unknown kind."""
        return self._owners[kind]

    def plugins(self) -> list[str]:
        """Names of the registered plugins, in registration order."""
        return [name for name, _ in self._pm.list_name_plugin()]


__all__ = ["HOOK_PREFIX", "KIND_NAME", "SERVED_SPEC_VERSIONS", "PluginHost"]
