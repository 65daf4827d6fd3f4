"""The console's rules, page by page, on MariaDB and on SQLite: sign-in and its cookie,
CSRF, the API's permissions, and a readable 4xx for every bad input."""

from __future__ import annotations

import re
import secrets

from tests.runtime.helpers import definition, publish, report, start, task, work
from tests.ui.conftest import Console
from weave_core.access.identity import Permission, create_namespace, create_token
from weave_core.runtime.reads import describe_instance


def _tenant(console: Console) -> tuple[str, str]:
    ns = f"ui-{secrets.token_hex(5)}"
    create_namespace(console.engine.db, ns)
    return ns, create_token(console.engine.db, ns, [Permission.ADMIN])


def _instance(console: Console, ns: str, *, fail: bool = False) -> str:
    publish(console.engine, ns, definition("pay", [task("charge"), task("mail")]))
    wid = start(console.engine, ns, "pay", {"amount": 1}).instance.instance_id
    if fail:
        report(console.engine, ns, work(console.engine, ns, handlers=["charge"])[0], fail=True)
    return wid


def _message(html: str) -> str:
    found = re.search(r'class="message">([^<]*)<', html)
    assert found is not None, html
    return found.group(1)


def test_sign_in_keeps_the_token_in_a_strict_httponly_cookie(console: Console) -> None:
    ns, token = _tenant(console)
    wid = _instance(console, ns)
    assert console.client.get("/ui/n/" + ns + "/instances",
                              follow_redirects=False).headers["location"] == "/ui/login"
    signed = console.sign_in(token)
    assert signed.status_code == 303 and signed.headers["location"] == f"/ui/n/{ns}/instances"
    cookie = next(c for c in signed.headers.get_list("set-cookie")
                  if c.startswith("weave_ui_session="))
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
    for path in (f"/ui/n/{ns}/instances", f"/ui/n/{ns}/instances/{wid}",
                 f"/ui/n/{ns}/definitions", f"/ui/n/{ns}/definitions/pay/versions/1",
                 f"/ui/n/{ns}/queues"):
        page = console.client.get(path)
        assert page.status_code == 200, (path, page.text)
        assert token not in page.text and token not in str(page.url)
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["cache-control"] == "no-store"
    assert wid in console.client.get(f"/ui/n/{ns}/instances").text


def test_a_bad_token_or_a_forged_sign_in_is_refused(console: Console) -> None:
    _, token = _tenant(console)
    bad = console.sign_in("wv_0123456789abcdef_" + "x" * 40)
    assert bad.status_code == 401 and "was not accepted" in bad.text
    forged = console.client.post("/ui/login", data={"token": token, "nonce": "guess"},
                                 follow_redirects=False)
    assert forged.status_code == 403 and "weave_ui_session" not in forged.headers.get(
        "set-cookie", "")


def test_every_form_needs_the_session_csrf_token(console: Console) -> None:
    ns, token = _tenant(console)
    wid = _instance(console, ns)
    console.sign_in(token)
    fields = {"action": "pause", "operation_id": "p-1", "reason": "r",
              "expected_control_version": "0", "confirm": "yes"}
    url = f"/ui/n/{ns}/instances/{wid}/act"
    for csrf in (None, "0" * 64):
        sent = dict(fields, **({} if csrf is None else {"csrf": csrf}))
        refused = console.client.post(url, data=sent)
        assert refused.status_code == 403 and "csrf_failed" in refused.text
    view = describe_instance(console.engine.db, ns, wid)
    assert view["paused"] is False and view["operations"] == []
    out = console.client.post("/ui/logout", data={"csrf": "nope"})
    assert out.status_code == 403  # a forged sign-out changes nothing
    assert console.client.get(f"/ui/n/{ns}/instances").status_code == 200


def test_the_api_permission_rules_hold(console: Console) -> None:
    ns, _ = _tenant(console)
    wid = _instance(console, ns)
    other, other_token = _tenant(console)
    console.sign_in(create_token(console.engine.db, ns, [Permission.READ]))
    csrf = console.csrf(f"/ui/n/{ns}/instances/{wid}")
    for action, permission in (("pause", "control"), ("signal", "signal"),
                               ("recover", "review")):
        refused = console.client.post(f"/ui/n/{ns}/instances/{wid}/act", data={
            "csrf": csrf, "action": action, "operation_id": "x-1", "reason": "r",
            "expected_control_version": "0"})
        assert refused.status_code == 403, refused.text
        assert _message(refused.text) == (f"Your token lacks the &#39;{permission}&#39; "
                                          "permission, so this action was refused. Sign in "
                                          "with a token that has it.")
    assert console.client.get(f"/ui/n/{other}/instances").status_code == 404
    assert console.client.get(f"/ui/n/{ns}/instances/wf_nope").status_code == 404
    console.sign_in(other_token)  # another namespace's instance is not found
    assert console.client.get(f"/ui/n/{ns}/instances/{wid}").status_code == 404


def test_bad_inputs_get_a_readable_4xx(console: Console) -> None:
    ns, token = _tenant(console)
    wid = _instance(console, ns)
    console.sign_in(token)
    base = f"/ui/n/{ns}"
    for path, status in ((base + "/instances?status=DONE", 422),
                         (base + "/instances?paused=maybe", 422),
                         (base + "/instances?created_after=yesterday", 422),
                         (base + "/instances?cursor=%%%", 422),
                         (base + f"/instances/{wid}?step=nope", 422),
                         (base + f"/instances/{wid}?after=-1", 422),
                         (base + "/definitions/missing", 404),
                         (base + "/definitions/pay/versions/9", 404),
                         (base + "/definitions/pay/diff?a=1", 422),
                         ("/ui/no/such/page", 404)):
        answer = console.client.get(path)
        assert answer.status_code == status, (path, answer.text)
        assert answer.headers["content-type"].startswith("text/html"), path
        assert _message(answer.text)
    csrf = console.csrf(base + f"/instances/{wid}")
    url = base + f"/instances/{wid}/act"
    ok = {"csrf": csrf, "operation_id": "b-1", "reason": "r", "expected_control_version": "0"}
    for fields, status in ((dict(ok, action="explode"), 422),
                           (dict(ok, action="pause", reason=" "), 422),
                           (dict(ok, action="pause", expected_control_version="x"), 422),
                           (dict(ok, action="signal", name="n", correlation_key="k",
                                 payload="{not json"), 422),
                           (dict(ok, action="conclude", step_id="charge",
                                 conclusion="retry_safe", evidence="[1,"), 422)):
        answer = console.client.post(url, data=fields)
        assert answer.status_code == status, (fields, answer.text)
        assert _message(answer.text)
    typed = console.client.post(url, content=b"{}", headers={"content-type": "application/json"})
    assert typed.status_code == 415
    twice = console.client.post(url, content=f"csrf={csrf}&action=pause&action=cancel".encode(),
                                headers={"content-type": "application/x-www-form-urlencoded"})
    assert twice.status_code == 400
    big = console.client.post(url, data={"csrf": csrf, "reason": "x" * 3_000_000})
    assert big.status_code == 413
    assert describe_instance(console.engine.db, ns, wid)["operations"] == []


def test_a_stale_step_version_is_refused_and_shown(console: Console) -> None:
    ns, token = _tenant(console)
    wid = _instance(console, ns, fail=True)
    console.sign_in(token)
    step = f"/ui/n/{ns}/instances/{wid}?step=charge"
    page = console.client.get(step)
    assert "In review: task_failed" in page.text and "Conclude on step charge" in page.text
    version = re.search(r'name="expected_state_version" value="(\d+)"', page.text)
    assert version is not None
    csrf = console.csrf(step)
    stale = console.client.post(f"/ui/n/{ns}/instances/{wid}/act", data={
        "csrf": csrf, "action": "recover", "operation_id": "rec-1", "reason": "again",
        "step_id": "charge", "expected_state_version": str(int(version.group(1)) - 1),
        "confirm": "yes"})
    assert stale.status_code == 409
    assert _message(stale.text).startswith("The step charge changed after you opened the page")
    recovered = console.client.post(f"/ui/n/{ns}/instances/{wid}/act", data={
        "csrf": csrf, "action": "recover", "operation_id": "rec-1", "reason": "again",
        "step_id": "charge", "expected_state_version": version.group(1), "confirm": "yes"},
        follow_redirects=False)
    assert recovered.status_code == 303 and "done=recover" in recovered.headers["location"]
    view = describe_instance(console.engine.db, ns, wid)
    assert view["status"] == "RUNNING" and view["operations"][0]["kind"] == "review.recover"


def test_sign_out_clears_the_cookie(console: Console) -> None:
    ns, token = _tenant(console)
    console.sign_in(token)
    csrf = console.csrf(f"/ui/n/{ns}/instances")
    out = console.client.post("/ui/logout", data={"csrf": csrf}, follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/ui/login"
    assert any(c.startswith('weave_ui_session=""') for c in out.headers.get_list("set-cookie"))
    assert console.client.get(f"/ui/n/{ns}/instances", follow_redirects=False
                              ).headers["location"] == "/ui/login"


def test_signing_out_without_a_session_just_goes_to_the_sign_in_page(console: Console) -> None:
    out = console.client.post("/ui/logout", data={}, follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/ui/login"
    home = console.client.get("/ui/", follow_redirects=False)
    assert home.status_code == 303 and home.headers["location"] == "/ui/login"
