"""A ``weave`` that never dumps a traceback: every failure is one ``error[code]: message``
line on stderr with a non-zero exit, every command has ``--json``, ``--version``, and the
client commands do not import the engine (each run as a real ``weave`` process)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.live_server import LiveServer, weave_command
from weave_http.cli import CLIENT_COMMANDS, COMMANDS, build_parser

ONE_LINE = re.compile(r"^error\[([a-z_]+)\]: \S.*\n$")
SERVER_MODULES = ("weave_core", "weave_nodes", "weave_bench", "starlette", "sqlalchemy", "uvicorn",
                  "weave_http.app", "weave_http.routes")
NO_JSON_HERE = {"serve"}
"""A server prints log lines, not an outcome: ``weave serve --log-format json``."""


def run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(weave_command(*argv), capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def assert_one_line(result: subprocess.CompletedProcess[str], code: str) -> str:
    assert result.returncode == 1, (result.returncode, result.stderr)
    match = ONE_LINE.match(result.stderr)
    assert match is not None and "Traceback" not in result.stderr, result.stderr
    assert match.group(1) == code, result.stderr
    return result.stderr


def test_version() -> None:
    result = run("--version")
    assert result.returncode == 0 and result.stderr == ""
    assert re.fullmatch(r"weave \d+\.\d+\.\d+ \(weave-sdk \d+\.\d+\.\d+, Python 3\.\d+\.\d+\)\n",
                        result.stdout), result.stdout


@pytest.mark.parametrize(("url", "code", "says"), [
    ("postgresql://u:secret@db/weave", "unsupported_database_url", "unsupported database URL"),
    ("mysql+mysqldb://u:secret@db/weave", "unsupported_database_url", "use mysql+pymysql://"),
    ("not a url at all", "malformed_database_url", "cannot be read"),
    ("mysql+pymysql://root:secret@127.0.0.1:1/weave", "database_unreachable",
     "Can't connect to MySQL server"),
])
def test_bad_database_urls(url: str, code: str, says: str) -> None:
    for argv in (("namespace", "create", "shop"), ("token", "create", "--namespace", "shop",
                                                    "--permission", "read"),
                 ("queue", "set-capacity", "--namespace", "shop", "jobs", "5")):
        line = assert_one_line(run(*argv, "--database-url", url), code)
        assert says in line and "secret" not in line


def test_a_server_that_is_down() -> None:
    down = {"WEAVE_URL": "http://127.0.0.1:1", "WEAVE_TOKEN": "wv_x", "WEAVE_NAMESPACE": "n"}
    for argv in (("list",), ("show", "wf_1"), ("start", "orders", "--wait"),
                 ("signals", "wf_1"), ("pause", "wf_1", "--reason", "r")):
        line = assert_one_line(run(*argv, env=down), "server_unreachable")
        assert "http://127.0.0.1:1" in line and "Connection refused" in line


def test_a_missing_setting_and_bad_targets(tmp_path: Path) -> None:
    assert_one_line(run("list", env={"WEAVE_URL": ""}), "bad_configuration")
    assert_one_line(run("worker", "no_such_module_here:worker"), "bad_target")
    (tmp_path / "broken_app.py").write_text("raise RuntimeError('no config file')\n")
    (tmp_path / "empty_app.py").write_text(
        "from weave_sdk import Client\nfrom weave_sdk.worker import Worker\n"
        "worker = Worker(Client(), queue='q')\n")
    here = {"PYTHONPATH": str(tmp_path), "WEAVE_URL": "http://127.0.0.1:1",
            "WEAVE_NAMESPACE": "n"}
    line = assert_one_line(run("worker", "broken_app:worker", env=here), "bad_target")
    assert "importing 'broken_app' failed: RuntimeError: no config file" in line
    line = assert_one_line(run("publish", "broken_app:flow", env=here), "bad_target")
    assert "RuntimeError: no config file" in line
    assert "has no handlers" in assert_one_line(run("worker", "empty_app:worker", env=here),
                                                "bad_target")
    assert_one_line(run("worker", "empty_app:worker", env={**here, "WEAVE_NAMESPACE": ""}),
                    "bad_configuration")


def test_a_closed_stdout(weave_server: LiveServer) -> None:
    """``weave list --json | head -c 0``: the reader went away before the output came."""
    read, write = os.pipe()
    os.close(read)  # every write now fails with EPIPE
    try:
        result = subprocess.run(
            weave_command("list", "--json", "--url", weave_server.base_url,
                          "--token", weave_server.token, "--namespace", weave_server.namespace),
            stdout=write, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write)
    assert_one_line(result, "stdout_closed")


def test_every_command_has_json() -> None:
    """Walks the command table: every command (and sub-command) takes ``--json``."""
    parser = build_parser()
    top = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(top.choices) == set(COMMANDS)
    listed = {a.dest: a.help for a in top._choices_actions}
    missing = []
    for name, (_, help_line) in COMMANDS.items():
        assert listed[name] == help_line, name  # the lazy table says what the module says
        if name in NO_JSON_HERE:
            continue
        stack = [(name, top.choices[name])]
        while stack:
            path, sub = stack.pop()
            nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
            if nested:
                stack.extend((f"{path} {n}", p) for n, p in nested[0].choices.items())
            elif "--json" not in sub._option_string_actions:
                missing.append(path)
    assert missing == []


@pytest.mark.parametrize("command", sorted(CLIENT_COMMANDS))
def test_client_commands_do_not_import_the_server(command: str) -> None:
    probe = ("import json, sys\nfrom weave_http.cli import main\n"
             "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
             "print(json.dumps(sorted(m for m in sys.modules "
             f"if m.startswith({SERVER_MODULES!r}))))")
    result = subprocess.run([sys.executable, "-c", probe, command, "--help"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == []


def test_a_client_command_that_runs_imports_no_server_either() -> None:
    probe = ("import json, sys\nfrom weave_http.cli import main\ncode = main(sys.argv[1:])\n"
             f"print(json.dumps([code, sorted(m for m in sys.modules "
             f"if m.startswith({SERVER_MODULES!r}))]))")
    result = subprocess.run([sys.executable, "-c", probe, "list", "--url", "http://127.0.0.1:1",
                             "--token", "wv_x", "--namespace", "n"],
                            capture_output=True, text=True, timeout=60)
    assert json.loads(result.stdout) == [1, []]
    assert result.stderr.startswith("error[server_unreachable]: ")


def test_the_choices_spelt_out_for_a_fast_help_match_the_sdk() -> None:
    from weave_http.cli.worker import LOG_FORMATS, LOG_LEVELS
    from weave_http.cli.workflows import STATUSES
    from weave_sdk import logs
    from weave_sdk.workflows import WorkflowStatus

    assert STATUSES == tuple(s.value for s in WorkflowStatus)
    assert (LOG_FORMATS, LOG_LEVELS) == (logs.LOG_FORMATS, logs.LOG_LEVELS)
