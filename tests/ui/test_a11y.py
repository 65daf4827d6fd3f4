"""Keyboard navigation and form labels on the console's main pages (headless Chromium,
real ``weave serve``), and screenshots of the definitions and queues pages."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.live_server import LiveServer
from tests.ui.conftest import shot, sign_in
from tests.ui.helpers import Api, claim_definition, phase

UNLABELLED = """() => Array.from(document.querySelectorAll('input, select, textarea'))
  .filter(e => e.type !== 'hidden')
  .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label'))
  .map(e => e.outerHTML)"""
NAMELESS = """() => Array.from(document.querySelectorAll('button, a[href]'))
  .filter(e => !(e.textContent.trim() || e.getAttribute('aria-label')))
  .map(e => e.outerHTML)"""
FOCUSED = "() => document.activeElement ? document.activeElement.outerHTML : ''"


def _check(page: Page, name: str) -> None:
    assert page.evaluate(UNLABELLED) == [], name
    assert page.evaluate(NAMELESS) == [], name
    assert page.locator("html").get_attribute("lang") == "en"
    expect(page.locator("h1")).to_have_count(1)


def _tab_to(page: Page, selector: str, limit: int = 60) -> int:
    for presses in range(1, limit + 1):
        page.keyboard.press("Tab")
        if page.evaluate(f"() => !!document.activeElement.closest({selector!r})"):
            return presses
    raise AssertionError(f"Tab never reached {selector}: {page.evaluate(FOCUSED)}")


def test_keyboard_and_labels_on_the_main_pages(page: Page, weave_server: LiveServer,
                                               api: Api) -> None:
    api.publish(claim_definition("1"))
    api.publish(claim_definition("2"))
    wid = api.start({"claim_id": "k-1", "amount": 10}, key="k-1")
    api.work("validate")
    api.until(wid, lambda v: phase(v, "approval") == "ACTIVE")
    ns = f"{weave_server.base_url}/ui/n/{weave_server.namespace}"

    page.goto(f"{weave_server.base_url}/ui/login")
    _check(page, "login")
    expect(page.get_by_label("API token")).to_be_focused()  # autofocus
    sign_in(page, weave_server, weave_server.token)
    _check(page, "instances")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("main")).to_be_focused()
    assert _tab_to(page, "form.filters") <= 2  # the filters come first in the content
    expect(page.get_by_label("Status")).to_be_focused()

    page.goto(f"{ns}/instances/{wid}")
    _check(page, "instance")
    _tab_to(page, "svg.graph a")
    assert "validate" in page.evaluate(FOCUSED)  # the first step of the graph
    page.keyboard.press("Tab")
    assert "approval" in page.evaluate(FOCUSED)
    page.keyboard.press("Enter")
    expect(page.locator("#step-detail")).to_be_focused()
    expect(page.locator("#step-detail h2")).to_contain_text("approval")
    _check(page, "instance with a step")

    page.goto(f"{ns}/definitions")
    _check(page, "definitions")
    shot(page, "definitions")
    _tab_to(page, "main a[href$='/definitions/claim']")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_contain_text("claim")
    _check(page, "definition")
    page.get_by_role("button", name="Compare").click()
    expect(page.locator("pre.diff")).to_contain_text('+            "id": "archive_wait",')
    _check(page, "diff")
    shot(page, "diff")
    page.goto(f"{ns}/definitions/claim/versions/2")
    _check(page, "version")
    expect(page.locator("svg.graph [data-step='archive_wait']")).to_have_count(1)
    shot(page, "version", full=True)
    page.goto(f"{ns}/queues")
    _check(page, "queues")
    expect(page.locator("tbody")).to_contain_text("claims")
    shot(page, "queues")
