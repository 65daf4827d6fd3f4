"""End to end in headless Chromium against a real ``weave serve`` (MariaDB, its tick):
what an operator and a reviewer do in the console, with screenshots of the main pages."""

from __future__ import annotations

import re

from playwright.sync_api import BrowserContext, Page, expect

from tests.live_server import LiveServer, ServerProcess
from tests.ui.conftest import shot, shot_of, sign_in
from tests.ui.helpers import Api, claim_definition, phase, to_review
from weave_core.access.identity import Permission


def _act(page: Page, form: str, reason: str) -> None:
    """Fill a form of the instance page, submit it, and confirm."""
    card = page.get_by_role("form", name=form)
    card.get_by_label("Reason").fill(reason)
    card.get_by_role("button").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Confirm")


def test_sign_in_filter_open_pause_resume_and_signal(
        page: Page, context: BrowserContext, weave_server: LiveServer, api: Api,
        weave_server_process: ServerProcess) -> None:
    api.publish(claim_definition("1"))
    api.publish(claim_definition("2"))
    other = dict(claim_definition("1"), definition_id="refund")
    api.publish(other)
    wid = api.start({"claim_id": "c-7", "amount": 2500}, key="c-7")
    api.start({"claim_id": "r-1", "amount": 5}, key="r-1", definition_id="refund")
    api.work("validate", output={"ok": True, "score": "0.1000000000000000055511151231257827"})
    api.until(wid, lambda v: phase(v, "approval") == "ACTIVE")

    page.goto(f"{weave_server.base_url}/ui/n/{weave_server.namespace}/instances")
    expect(page).to_have_url(re.compile(r".*/ui/login$"))  # not signed in: the sign-in page
    shot(page, "login")
    sign_in(page, weave_server, weave_server.token)
    (cookie,) = [c for c in context.cookies() if c["name"] == "weave_ui_session"]
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    assert weave_server.token not in page.content() and weave_server.token not in page.url

    rows = page.locator("#rows tr.instance")
    expect(rows).to_have_count(2)
    page.get_by_label("Definition").fill("claim")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("signal “approval” (key c-7)")
    page.get_by_label("Status").select_option("SUCCEEDED")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#rows")).to_contain_text("No instance matches")
    page.get_by_label("Status").select_option("WAITING")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(1)
    shot(page, "instances")

    page.get_by_role("link", name=wid).click()
    graph = page.locator("svg.graph")
    expect(graph).to_be_visible()
    expect(graph.locator("[data-step]")).to_have_count(9)  # version 2: 7 leaves, 2 composites
    expect(graph.locator(".ph-succeeded[data-step='validate']")).to_have_count(1)
    expect(graph.locator(".ph-active[data-step='approval']")).to_have_count(1)
    expect(page.locator(".timeline li").first).to_contain_text("#1")
    # the keyboard reaches a step in the graph and opens its records
    page.locator("svg.graph a[data-step='validate']").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#step-detail h2")).to_contain_text("validate")
    expect(page.locator("#step-detail")).to_contain_text(
        "0.1000000000000000055511151231257827")  # exact, as stored
    shot(page, "instance-step", full=True)

    _act(page, "Pause this instance", "partner maintenance window")
    expect(page.locator(".effect")).to_contain_text("closes the instance's execution gate")
    shot(page, "confirm-pause")
    page.get_by_role("button", name="Yes, pause").click()
    expect(page.locator(".done")).to_contain_text("pause recorded")
    expect(page.locator("dl.facts")).to_contain_text("paused")
    _act(page, "Resume this instance", "window over")
    page.get_by_role("button", name="Yes, resume").click()
    expect(page.locator(".done")).to_contain_text("resume recorded")

    signal = page.get_by_role("form", name="Send a signal")
    expect(signal.get_by_label("Name")).to_have_value("approval")  # from the open wait
    expect(signal.get_by_label("Correlation key")).to_have_value("c-7")
    signal.get_by_label("Payload (JSON)").fill('{"approved": true, "limit": 1e400}')
    signal.get_by_role("button").click()
    page.get_by_role("button", name="Yes, signal").click()
    expect(page.locator(".done")).to_contain_text("signal recorded")
    view = api.until(wid, lambda v: phase(v, "approval") == "SUCCEEDED")
    assert view["signals"][0]["state"] == "CONSUMED"
    page.reload()
    expect(graph.locator(".ph-succeeded[data-step='approval']")).to_have_count(1)
    # the branch chose the senior case (amount 2500 > 1000), and it is marked
    expect(graph.locator("rect.column.chosen")).to_have_count(1)
    expect(graph).to_contain_text("✓ chosen")
    shot(page, "instance", full=True)
    output = "".join(weave_server_process.output)
    assert weave_server.token not in output  # never in a log


def test_reviewer_concludes_and_recovers_a_step(page: Page, weave_server: LiveServer,
                                                api: Api) -> None:
    api.publish(claim_definition("1"))
    wid = to_review(api)
    review = weave_server.token_with(Permission.REVIEW, Permission.READ)
    sign_in(page, weave_server, review)
    page.get_by_label("Status").select_option("NEEDS_REVIEW")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#rows tr.instance").first).to_contain_text("review: task_failed")
    page.get_by_role("link", name=wid).click()
    box = page.locator("section.review")
    expect(box).to_contain_text("In review: task_failed")
    expect(page.locator("svg.graph .ph-failed[data-step='submit_payment']")).to_have_count(1)
    shot(page, "review")
    box.get_by_role("link", name="submit_payment").click()
    detail = page.locator("#step-detail")
    expect(detail).to_contain_text("payment partner timed out")  # the task's error
    expect(detail).to_contain_text("ui-test-worker")  # its attempt
    shot_of(detail, "review-step")
    conclude = page.get_by_role("form", name="Conclude on step submit_payment")
    conclude.get_by_label("Conclusion").select_option("effect_confirmed_absent")
    conclude.get_by_label("Evidence (a JSON object)").fill(
        '{"ticket": "OPS-17", "partner_query": "no payment for c-1001"}')
    _act(page, "Conclude on step submit_payment", "checked the partner portal")
    page.get_by_role("button", name="Yes, conclude").click()
    expect(page.locator(".done")).to_contain_text("conclude recorded")
    _act(page, "Recover step submit_payment", "partner is back; no payment was made")
    shot(page, "confirm-recover")
    page.get_by_role("button", name="Yes, recover").click()
    expect(page.locator(".done")).to_contain_text("recover recorded")
    expect(page.locator("dl.facts").first).to_contain_text("RUNNING")
    ops = page.locator("section[aria-labelledby='ops-h']")
    expect(ops).to_contain_text("review.conclude")
    expect(ops).to_contain_text("OPS-17")
    expect(ops).to_contain_text("review.recover")
    api.work("submit_payment", output={"paid": 250})
    api.until(wid, lambda v: v["status"] == "SUCCEEDED")
    page.reload()
    expect(page.locator("dl.facts").first).to_contain_text("SUCCEEDED")
    expect(page.locator(".timeline")).to_contain_text("step.recovered")


def test_a_stale_page_is_refused_with_a_message(page: Page, weave_server: LiveServer,
                                                api: Api) -> None:
    api.publish(claim_definition("1"))
    wid = api.start({"claim_id": "c-9", "amount": 1}, key="c-9")
    sign_in(page, weave_server, weave_server.token)
    page.goto(f"{weave_server.base_url}/ui/n/{weave_server.namespace}/instances/{wid}")
    api.pause(wid, expected=0)  # someone else acts after this page was rendered
    _act(page, "Pause this instance", "me too")
    page.get_by_role("button", name="Yes, pause").click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("Someone changed this instance after you opened the page")
    expect(alert).to_contain_text("control_version_conflict")
    expect(alert).to_contain_text("HTTP 409")
    expect(page.get_by_role("link", name="Back to the page you came from")).to_have_attribute(
        "href", f"/ui/n/{weave_server.namespace}/instances/{wid}")
    shot(page, "stale")
    assert api.get(wid)["control_version"] == 1  # nothing overwritten


def test_a_read_token_sees_but_cannot_act_then_signs_out(
        page: Page, context: BrowserContext, weave_server: LiveServer, api: Api) -> None:
    api.publish(claim_definition("1"))
    wid = api.start({"claim_id": "c-3", "amount": 1}, key="c-3")
    sign_in(page, weave_server, weave_server.token_with(Permission.READ))
    page.get_by_role("link", name=wid).click()
    expect(page.get_by_role("note")).to_contain_text("can read only")
    card = page.get_by_role("form", name="Pause this instance")
    card.get_by_label("Reason").fill("try")
    card.get_by_role("button").click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("lacks the 'control' permission")
    expect(alert).to_contain_text("HTTP 403")
    assert api.get(wid)["paused"] is False
    # another namespace's pages are invisible: 404, as in the API
    page.goto(f"{weave_server.base_url}/ui/n/not-{weave_server.namespace}/instances")
    expect(page.get_by_role("alert")).to_contain_text("HTTP 404")
    page.goto(f"{weave_server.base_url}/ui/n/{weave_server.namespace}/instances")
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r".*/ui/login$"))
    assert not [c for c in context.cookies() if c["name"] == "weave_ui_session"]
    page.goto(f"{weave_server.base_url}/ui/n/{weave_server.namespace}/instances/{wid}")
    expect(page).to_have_url(re.compile(r".*/ui/login$"))
