"""``weave migrate --status`` (issue #13 item 7): current and pending revisions, on a real
empty MariaDB database, then after ``weave migrate``; it changes nothing itself."""

from __future__ import annotations

import json

import pytest

from weave_core.storage.migrate import current_revision, head_revision, script_directory
from weave_http.cli import main


def test_status_lists_pending_revisions_and_changes_nothing(
    empty_mysql_url: str, capsys: pytest.CaptureFixture[str],
) -> None:
    every = [s.revision for s in reversed(list(script_directory().walk_revisions()))]
    assert main(["migrate", "--status", "--database-url", empty_mysql_url]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "current revision: none (empty database)"
    assert out[1] == f"head revision: {head_revision()}"
    assert [line.split()[1] for line in out[2:]] == every
    assert all(line.startswith("pending: ") for line in out[2:])
    assert current_revision(empty_mysql_url) is None  # --status migrated nothing

    assert main(["migrate", "--database-url", empty_mysql_url]) == 0
    capsys.readouterr()
    assert main(["migrate", "--status", "--database-url", empty_mysql_url]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"current revision: {head_revision()}", f"head revision: {head_revision()}",
                   "up to date: no pending migration"]


def test_migrate_prints_each_revision_as_it_is_applied(
    empty_mysql_url: str, capsys: pytest.CaptureFixture[str],
) -> None:
    every = [s.revision for s in reversed(list(script_directory().walk_revisions()))]
    assert main(["migrate", "--database-url", empty_mysql_url]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in out[:-1]] == every
    assert all(line.startswith("applied ") for line in out[:-1])
    assert out[-1] == f"database migrated from empty to {head_revision()}"
    assert main(["migrate", "--json", "--database-url", empty_mysql_url]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again == {"from": head_revision(), "to": head_revision(), "applied": []}
    assert main(["migrate", "--status", "--json", "--database-url", empty_mysql_url]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status == {"current": head_revision(), "head": head_revision(), "pending": []}
