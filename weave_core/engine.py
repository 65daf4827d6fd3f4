"""One engine per process: its database, plugin host, limits and node id (no globals).

Everything that serves requests or runs the tick takes an ``Engine``; tests build as many
as they like side by side (several "nodes" on one database).
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass, field

from weave_core.access.identity import TokenCache
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_core.storage.db import Database


def new_node_id() -> str:
    """A node id unique among live processes: host, pid and a random suffix."""
    host = socket.gethostname().split(".")[0][:40] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


@dataclass
class Engine:
    """The kernel's handle: pass it to services; close it when the process stops."""

    db: Database
    plugins: PluginHost
    limits: Limits = field(default_factory=Limits)
    node_id: str = field(default_factory=new_node_id)
    tokens: TokenCache = field(default_factory=TokenCache)
    """Tokens this process checked in the last second (``identity.TokenCache``)."""

    @property
    def actor(self) -> str:
        """Audit actor of this node's own decisions (R-6.8)."""
        return f"system:weave:{self.node_id}"

    @classmethod
    def open(
        cls,
        url: str,
        *,
        limits: Limits | None = None,
        node_id: str | None = None,
        plugins: PluginHost | None = None,
    ) -> Engine:
        """Connect to ``url`` and load the node plugins installed in this environment."""
        return cls(
            db=Database.from_url(url),
            plugins=plugins if plugins is not None else PluginHost.from_entry_points(),
            limits=limits if limits is not None else Limits.from_env(),
            node_id=node_id or new_node_id(),
        )

    def close(self) -> None:
        self.db.dispose()


__all__ = ["Engine", "new_node_id"]
