"""docs/cli.md documents every command the ``weave`` parser registers."""

from __future__ import annotations

import argparse
from pathlib import Path

from weave_http.cli import build_parser

CLI_DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _commands() -> list[str]:
    parser = build_parser()
    names: list[str] = []
    for action in parser._actions:  # argparse exposes subcommands only through _actions
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                nested = [
                    f"{name} {child}"
                    for a in sub._actions
                    if isinstance(a, argparse._SubParsersAction)
                    for child in a.choices
                ]
                names.extend(nested or [name])
    return names


def test_every_command_has_a_section() -> None:
    text = CLI_DOC.read_text()
    missing = [name for name in _commands() if f"weave {name}" not in text]
    assert not missing, f"docs/cli.md lacks: {missing}"


def test_the_command_list_is_complete() -> None:
    assert {"serve", "migrate", "namespace create", "token create", "token revoke",
            "publish", "demo", "bench"} <= set(_commands())
