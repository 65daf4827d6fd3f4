"""``weave migrate``, ``weave namespace create``, ``weave token create|revoke``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from weave_core.access.identity import Permission, authenticate
from weave_core.foundation.errors import AuthenticationError
from weave_core.storage.db import Database
from weave_core.storage.migrate import current_revision, head_revision
from weave_http.cli import main


@pytest.fixture
def url(sqlite_url: str) -> str:
    return sqlite_url


@pytest.fixture
def opened(url: str) -> Iterator[Database]:
    db = Database.from_url(url, pool_size=1)
    yield db
    db.dispose()


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_migrate_then_again(capsys: pytest.CaptureFixture[str], empty_mysql_url: str) -> None:
    code, out, _ = _run(capsys, "migrate", "--database-url", empty_mysql_url)
    assert code == 0
    *applied, summary = out.strip().splitlines()
    assert summary == f"database migrated from empty to {head_revision()}"
    assert applied and all(line.startswith("applied ") for line in applied)  # as it goes
    assert current_revision(empty_mysql_url) == head_revision()
    code, out, _ = _run(capsys, "migrate", "--database-url", empty_mysql_url)
    assert (code, out.strip()) == (0, f"database already at revision {head_revision()}")


def test_migrate_uses_weave_database_url(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    monkeypatch.setenv("WEAVE_DATABASE_URL", url)
    assert _run(capsys, "migrate")[0] == 0
    assert current_revision(url) == head_revision()


def test_namespace_and_token_lifecycle(
    capsys: pytest.CaptureFixture[str], url: str, opened: Database
) -> None:
    db_args = ("--database-url", url)
    code, out, _ = _run(capsys, "namespace", "create", "acme", *db_args)
    assert (code, out.strip()) == (0, "namespace acme created")

    code, out, _ = _run(
        capsys,
        "token",
        "create",
        "--namespace",
        "acme",
        "--permission",
        "publish",
        "--permission",
        "read",
        "--description",
        "ci",
        *db_args,
    )
    assert code == 0
    token = out.splitlines()[-1]
    principal = authenticate(opened, token)
    assert principal.namespace == "acme"
    assert principal.permissions == {Permission.PUBLISH, Permission.READ}

    code, out, _ = _run(capsys, "token", "revoke", principal.token_id, *db_args)
    assert (code, out.strip()) == (0, f"token {principal.token_id} revoked")
    with pytest.raises(AuthenticationError):
        authenticate(opened, token)


def test_errors_print_their_code(capsys: pytest.CaptureFixture[str], url: str) -> None:
    db_args = ("--database-url", url)
    assert _run(capsys, "namespace", "create", "acme", *db_args)[0] == 0
    code, out, err = _run(capsys, "namespace", "create", "acme", *db_args)
    assert (code, out) == (1, "")
    assert err.startswith("error[already_exists]: namespace 'acme' already exists")

    code, _, err = _run(capsys, "namespace", "create", "Bad Name", *db_args)
    assert code == 1 and err.startswith("error[validation_failed]")

    code, _, err = _run(
        capsys, "token", "create", "--namespace", "nope", "--permission", "read", *db_args
    )
    assert code == 1 and err.startswith("error[not_found]")

    code, _, err = _run(capsys, "token", "revoke", "0000000000000000", *db_args)
    assert code == 1 and err.startswith("error[not_found]")


def test_unknown_permission_is_a_usage_error(capsys: pytest.CaptureFixture[str], url: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(
            [
                "token",
                "create",
                "--namespace",
                "acme",
                "--permission",
                "root",
                "--database-url",
                url,
            ]
        )
    assert info.value.code == 2
    assert "invalid choice: 'root'" in capsys.readouterr().err


def test_unmigrated_mysql_is_refused(
    capsys: pytest.CaptureFixture[str], empty_mysql_url: str
) -> None:
    code, _, err = _run(capsys, "namespace", "create", "acme", "--database-url", empty_mysql_url)
    assert code == 1
    assert err.startswith("error[database_not_migrated]")
    assert "weave migrate" in err


def test_console_script_end_to_end(tmp_path: Path) -> None:
    """The installed ``weave`` command, with the default database in the working directory."""
    weave = Path(sys.executable).with_name("weave")
    env = {k: v for k, v in os.environ.items() if k != "WEAVE_DATABASE_URL"}

    def _weave(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(weave), *argv],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    assert _weave("migrate").returncode == 0
    assert (tmp_path / "weave.db").exists()
    assert _weave("namespace", "create", "shop").returncode == 0
    created = _weave("token", "create", "--namespace", "shop", "--permission", "admin")
    assert created.returncode == 0, created.stderr
    token = created.stdout.splitlines()[-1]

    db = Database.from_url(f"sqlite:///{tmp_path / 'weave.db'}", pool_size=1)
    try:
        assert authenticate(db, token).permissions == {Permission.ADMIN}
    finally:
        db.dispose()
