"""The README's "Using it" commands run as written and end with a finished instance
(issue #14 item 7): ``weave serve`` on the embedded SQLite default, then the second
terminal's block in bash. Only the port changes (the README's 8080 may be taken here)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

from tests.live_server import start_server

ROOT = Path(__file__).resolve().parents[2]
_SH = re.compile(r"^```sh\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _using_it() -> tuple[str, str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Using it"):text.index("## Documentation")]
    serve, rest = _SH.findall(section)
    return serve, rest


def test_the_first_hour_finishes(tmp_path: Path) -> None:
    serve, rest = _using_it()
    assert serve.strip().startswith(". .venv/bin/activate && weave serve")
    database = f"sqlite:///{tmp_path / 'weave.db'}"  # the default file, in a scratch place
    server = start_server(database)  # `weave serve`, on a free port
    env = {**os.environ, "WEAVE_DATABASE_URL": database, "ORDERS_OUTAGES": "/nonexistent"}
    for name in ("WEAVE_URL", "WEAVE_TOKEN", "WEAVE_NAMESPACE"):
        env.pop(name, None)
    script = rest.replace("http://127.0.0.1:8080", server.base_url)
    log = tmp_path / "out.txt"
    with log.open("w") as out:
        shell = subprocess.Popen(["bash", "-e", "-c", script], cwd=ROOT, env=env,
                                 stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = shell.wait(timeout=120)
        finally:
            try:
                os.killpg(shell.pid, signal.SIGTERM)  # the background worker
            except ProcessLookupError:
                pass
            server.stop()
    output = log.read_text()
    assert code == 0, output
    assert re.search(r"^started: wf_\w+ \(orders version 1, RUNNING\)$", output,
                     re.MULTILINE), output
    assert re.search(r"^SUCCEEDED: wf_\w+ \(orders version 1\)$", output, re.MULTILINE), output
    assert " INFO weave_sdk.worker: worker started " in output  # the background worker's lines
    assert " attempt succeeded handler=reserve_stock@1 task=tsk_" in output
    assert 'output: {"status":"DELIVERED"}' in output
    assert "\npoll rounds\n" in output and "\nwaits\n" in output
