"""In Chromium (Debian's, see ``tests/dashboard/browser.py``): an operator finds the privacy
page in the navigation bar (marked as the current page once there) and the bar still fits a
phone 390 pixels wide; a viewer, who may not open the page, is not shown the link."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from scheduler.core.httpserver import BackgroundServer
from scheduler.dashboard.app import create_app
from scheduler.ledger.runs import Ledger
from tests.dashboard.auth_support import PASSWORDS, user_settings
from tests.dashboard.browser import DESKTOP, PHONE, chromium, horizontal_overflow, open_page
from tests.dashboard.web_support import project_settings
from tests.factories import FakeClock, make_run

#: Chromium's navigation bar; on the PostgreSQL pass the privacy page itself (an operator's
#: export and erasure, read and written on PostgreSQL) is checked by this test.
pytestmark = pytest.mark.pg_covered_by(
    "tests/privacy/test_privacy_page.py::test_an_operator_exports_and_erases_from_the_dashboard",
    reason="a browser's navigation bar over a page whose PostgreSQL path is checked there")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless, for this module's tests."""
    with chromium() as opened:
        yield opened


def _config() -> str:
    users = user_settings().users  # ana: operator, vic: viewer
    return "".join(f'[dashboard.users.{name}]\nrole = "{user.role}"\n'
                   f'password_hash = "{user.password_hash}"\n\n'
                   for name, user in users.items())


def _sign_in(page: Page, name: str) -> None:
    page.goto("/")
    assert "/login" in page.url
    page.fill("#user", name)
    page.fill("#password", PASSWORDS[name])
    page.click("button[type=submit]")
    page.wait_for_selector("#user-name")


def test_an_operator_reaches_privacy_from_the_nav_a_viewer_sees_no_link(
        browser: Browser, ledger: Ledger, clock: FakeClock, ledger_url: str,
        tmp_path: Path) -> None:
    make_run(ledger, 2)
    settings = project_settings(tmp_path, ledger_url, _config())
    with BackgroundServer(create_app(settings, ledger, clock=clock)) as server:
        for viewport in (PHONE, DESKTOP):
            with open_page(browser, server.base_url, viewport) as (page, watched):
                _sign_in(page, "ana")
                link = page.locator("#nav a[href='/privacy']")
                assert link.inner_text() == "Privacy" and link.is_visible()
                assert horizontal_overflow(page) == 0, ("/", viewport)
                link.click()
                page.wait_for_selector("#forget-form")
                assert page.url.endswith("/privacy")
                current = page.locator("#nav a[aria-current=page]")
                assert current.inner_text() == "Privacy"
                assert horizontal_overflow(page) == 0, ("/privacy", viewport)
                assert watched.dialogs == [] and watched.errors == [], watched
        with open_page(browser, server.base_url, PHONE) as (page, watched):
            _sign_in(page, "vic")
            assert page.locator("#nav a").count() > 0
            assert page.locator("#nav a[href='/privacy']").count() == 0
            assert watched.dialogs == [] and watched.errors == [], watched
