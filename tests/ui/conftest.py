"""Console fixtures: headless Debian Chromium driven by Playwright (never a downloaded
browser), and the folder the tests write their screenshots to (git-ignored)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, sync_playwright
from starlette.testclient import TestClient

from tests.conftest import migrated_database, opened_database
from tests.live_server import LiveServer
from tests.ui.helpers import Api
from weave_core.engine import Engine
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_core.storage.db import Database
from weave_http.app import create_app

Response = httpx.Response

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-quic"]
SCREENSHOTS = Path(__file__).parent / "screenshots"


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.set_default_timeout(15_000)
    yield ctx
    ctx.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    return context.new_page()


def shot(page: Page, name: str, *, full: bool = False) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=full)


def shot_of(locator: Locator, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    locator.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def sign_in(page: Page, server: LiveServer, token: str) -> None:
    page.goto(f"{server.base_url}/ui/login")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r".*/ui/n/.*/instances$"))


@pytest.fixture
def api(weave_server: LiveServer) -> Iterator[Api]:
    client = Api(weave_server)
    yield client
    client.client.close()


@pytest.fixture(scope="session")
def mysql_url() -> Iterator[str]:
    """A MariaDB database of the console tests alone (they add 10,000 instances)."""
    yield from migrated_database("weave_ui")


@pytest.fixture(scope="session")
def mysql_db(mysql_url: str) -> Iterator[Database]:
    yield from opened_database(mysql_url)


@pytest.fixture
def any_engine(any_db: Database, plugin_host: PluginHost) -> Engine:
    """An in-process engine on MariaDB and on the embedded SQLite default."""
    return Engine(db=any_db, plugins=plugin_host, limits=Limits(), node_id="ui-test")


@pytest.fixture
def mysql_engine(mysql_db: Database, plugin_host: PluginHost) -> Engine:
    return Engine(db=mysql_db, plugins=plugin_host, limits=Limits(), node_id="ui-test")


class Console:
    """The console through Starlette's TestClient: signs in like a browser does."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.client = TestClient(create_app(engine), raise_server_exceptions=True)

    def sign_in(self, token: str) -> Response:
        form = self.client.get("/ui/login")
        nonce = re.search(r'name="nonce" value="([^"]+)"', form.text)
        assert nonce is not None
        return self.client.post("/ui/login", data={"token": token, "nonce": nonce.group(1)},
                                follow_redirects=False)

    def csrf(self, path: str) -> str:
        found = re.search(r'name="csrf" value="([^"]+)"', self.client.get(path).text)
        assert found is not None
        return found.group(1)


@pytest.fixture
def console(any_engine: Engine) -> Iterator[Console]:
    c = Console(any_engine)
    with c.client:
        yield c
