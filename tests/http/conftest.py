"""Fixtures of the HTTP tests: in-process apps on MariaDB/SQLite, and a real ``weave serve``.

``weave_server`` starts a REAL server (``weave serve`` → uvicorn, in a subprocess, on
127.0.0.1 and a free port) against the session MariaDB database once per session, and for
each test creates a fresh namespace with an admin token. It yields a ``LiveServer`` that
unpacks as ``(base_url, admin_token, namespace)``; the fixtures live in
``tests/live_server.py`` and are shared through ``tests/conftest.py``.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field

import pytest
from starlette.testclient import TestClient

from weave_core.access.identity import Permission, create_namespace, create_token
from weave_core.engine import Engine
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_core.storage.db import Database
from weave_http.app import create_app

SERVER_START_TIMEOUT_S = 30.0
_LISTEN_LINE = re.compile(r"listening on (http://\S+)")


# --- in-process apps -----------------------------------------------------------------


def make_engine(db: Database, plugins: PluginHost, limits: Limits | None = None) -> Engine:
    return Engine(db=db, plugins=plugins, limits=limits or Limits(), node_id="http-test")


@pytest.fixture
def mysql_engine(mysql_db: Database, plugin_host: PluginHost) -> Engine:
    return make_engine(mysql_db, plugin_host)


@pytest.fixture
def any_engine(any_db: Database, plugin_host: PluginHost) -> Engine:
    return make_engine(any_db, plugin_host)


def client_for(engine: Engine) -> TestClient:
    """A TestClient that raises on an internal error: hostile input must never reach one."""
    return TestClient(create_app(engine), raise_server_exceptions=True)


@dataclass
class Tenant:
    """A namespace with tokens, one per permission set asked for."""

    db: Database
    namespace: str
    tokens: dict[str, str] = field(default_factory=dict)

    def token(self, *permissions: Permission | str) -> str:
        key = ",".join(sorted(str(p) for p in permissions))
        if key not in self.tokens:
            self.tokens[key] = create_token(self.db, self.namespace, list(permissions))
        return self.tokens[key]

    def headers(self, *permissions: Permission | str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token(*permissions)}"}


def new_tenant(db: Database) -> Tenant:
    namespace = f"ns-{secrets.token_hex(6)}"
    create_namespace(db, namespace)
    return Tenant(db, namespace)


@pytest.fixture
def tenant(any_db: Database) -> Tenant:
    """A fresh namespace on MariaDB and on SQLite (parametrised through ``any_db``)."""
    return new_tenant(any_db)


@pytest.fixture
def mysql_tenant(mysql_db: Database) -> Tenant:
    return new_tenant(mysql_db)



