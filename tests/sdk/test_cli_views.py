"""``weave start --wait`` says why, ``weave show`` prints signals, waits, rounds and
operations, ``weave show --key``, ``weave signals`` and what ``weave signal`` matched
(issue #14 items 4-6). Against the session's real server on MariaDB."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest

from tests.live_server import LiveServer
from tests.sdk.test_describe_live import _failing, refuse_card
from weave_http.cli import main
from weave_sdk import Client, FailurePolicy, Handler, RetryPolicy, Workflow, handler, loads, ref
from weave_sdk.worker import Worker
from weave_sdk.workflows import WorkflowFailedError


def weave(server: LiveServer, capsys: pytest.CaptureFixture[str],
          *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--url", server.base_url, "--token", server.token,
                 "--namespace", server.namespace])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_start_wait_prints_the_failing_step(weave_server: LiveServer,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    base, token, ns = weave_server
    with Client(base, token, ns) as client:
        client.publish(_failing("cli-fails", FailurePolicy.FAIL_AFTER_SETTLED))
        with Worker(client, queue="pay", handlers=[refuse_card], wait_seconds=1).running():
            code, out, err = weave(weave_server, capsys, "start", "cli-fails", "--input",
                                   '{"id": "o-1"}', "--wait", "--timeout", "30")
    assert code == 1
    assert out.startswith("started: wf_") and out.count("\n") == 1  # the id came first
    assert err.startswith("error[workflow_failed]: ")
    assert "  step: charge\n" in err and "  handler: refuse_card@1\n" in err
    assert "  attempts: 1/2\n" in err and "  error: card_declined: card of o-1 declined" in err


@handler("crash")
def crash(data: dict[str, Any]) -> None:
    ratio = data["n"] / 0  # a bug: ZeroDivisionError
    raise AssertionError(ratio)


def test_show_prints_the_handlers_traceback(weave_server: LiveServer,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A handler's unexpected exception travels to the server as the error's details
    (type, message and a bounded traceback) and ``weave show`` prints it."""
    base, token, ns = weave_server
    wf = Workflow("cli-crash", version="1", queue="crashes", input_schema={"type": "object"},
                  failure_policy=FailurePolicy.FAIL_AFTER_SETTLED)
    wf.task("divide", handler=crash, input={"n": ref.input("n")},
            retry=RetryPolicy(max_attempts=1))
    with Client(base, token, ns) as client:
        client.publish(wf)
        with Worker(client, queue="crashes", handlers=[crash], wait_seconds=1).running():
            handle = client.start("cli-crash", {"n": 7})
            with pytest.raises(WorkflowFailedError):
                handle.result(timeout=30)
    code, out, _ = weave(weave_server, capsys, "show", handle.workflow_id)
    assert code == 0
    section = out[out.index("\ntask errors\n"):]
    assert "(step divide, crash@1, attempts 1/1, FAILED): ZeroDivisionError: division by " \
        "zero" in section
    assert "    Traceback (most recent call last):" in section
    assert 'ratio = data["n"] / 0' in section and "_worker_attempts.py" not in section
    code, out, _ = weave(weave_server, capsys, "show", handle.workflow_id, "--json")
    error = loads(out)["workflow"]["tasks"][0]["error"]
    assert error["type"] == "ZeroDivisionError" and error["retryable"] is True
    assert error["details"]["traceback"].endswith("ZeroDivisionError: division by zero")


def test_show_signals_and_the_match_of_a_signal(weave_server: LiveServer,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    base, token, ns = weave_server
    wf = Workflow("cli-waits", version="1", input_schema={"type": "object"})
    wf.signal("approval", name="approval", correlation_key=ref.input("id"),
              timeout=timedelta(hours=1))
    wf.signal("second", name="second", correlation_key=ref.input("id"),
              timeout=timedelta(hours=1))
    with Client(base, token, ns) as client:
        client.publish(wf)
        handle = client.start("cli-waits", {"id": "k-1"}, idempotency_key="cli-k-1")
        handle.pause(reason="look first")
        wid = handle.workflow_id
    code, out, _ = weave(weave_server, capsys, "signal", wid, "approval",
                         "--correlation-key", "wrong-key", "--signal-id", "s-wrong")
    assert code == 0 and "stored unmatched: no open wait for 'approval' with key " \
        "'wrong-key'" in out
    code, out, _ = weave(weave_server, capsys, "signal", wid, "approval",
                         "--correlation-key", "k-1", "--signal-id", "s-right")
    assert code == 0
    assert "matched the open wait act_" in out or "consumed by act_" in out
    code, out, _ = weave(weave_server, capsys, "signals", wid)
    assert code == 0 and "s-wrong" in out and "s-right" in out
    code, out, _ = weave(weave_server, capsys, "show", "--key", "cli-k-1")
    assert code == 0 and wid in out
    for section in ("\nsignals\n", "\nwaits\n", "\noperations\n"):
        assert section in out, out
    assert "pause" in out and "look first" in out
    code, _, err = weave(weave_server, capsys, "show", "--key", "no-such-key")
    assert code == 1 and err.startswith("error[not_found]: ")
    code, _, err = weave(weave_server, capsys, "show")
    assert code == 1 and err.startswith("error[bad_argument]: ")


def test_publish_warns_about_handlers_no_worker_was_seen_for(
        weave_server: LiveServer, capsys: pytest.CaptureFixture[str], tmp_path: object) -> None:
    from pathlib import Path

    from weave_sdk import dumps

    wf = _failing("cli-seen", FailurePolicy.REVIEW)
    typo = Workflow("cli-typo", version="1", queue="pay")
    typo.task("charge", handler=refuse_card, input={"order_id": "o"})
    typo.task("ship", handler=Handler("shipp", "1"), input={})
    base, token, ns = weave_server
    with Client(base, token, ns) as client:
        with Worker(client, queue="pay", handlers=[refuse_card], wait_seconds=1).running():
            for _ in range(100):  # the worker's first claim reaches the server
                if client._run(_seen_call(client)):
                    break
                time.sleep(0.02)
            files = {}
            for item in (wf, typo):
                path = Path(str(tmp_path)) / f"{item.definition_id}.json"
                path.write_text(dumps(item.to_json()))
                files[item.definition_id] = str(path)
            code, _, err = weave(weave_server, capsys, "publish", files["cli-seen"])
            assert code == 0 and "warning" not in err, err
            code, _, err = weave(weave_server, capsys, "publish", files["cli-typo"])
    assert code == 0
    assert err.count("warning: ") == 1, err
    assert "handler 'shipp' version '1' on queue 'pay'" in err


def _seen_call(client: Client) -> object:
    from weave_sdk._json import loads
    from weave_sdk.client import _Call

    return _Call("GET", client._settings.ns_path("/handlers"),
                 lambda r: loads(r.content)["items"])
