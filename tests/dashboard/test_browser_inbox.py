"""In Chromium (Debian's, see ``tests/dashboard/browser.py``): the inbox and a recipient's
page show a reply holding ``<script>`` and ``<img onerror>`` as text (no dialog, no script
error, no image made); they fit a phone 390 pixels wide and a desktop with no sideways
scrolling; mark-as-handled needs the operator role and the session's CSRF token (a viewer
has no button and a forged post is refused; a post without the token is refused); the
inbox updates live when a reply is handled elsewhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from scheduler.core.httpserver import BackgroundServer
from scheduler.dashboard.app import create_app
from scheduler.ledger import access
from scheduler.ledger.queries import inbox as iq
from scheduler.ledger.runs import Ledger
from scheduler.usecases.reply_handling import mark_handled
from tests.dashboard.auth_support import PASSWORDS, user_settings
from tests.dashboard.browser import DESKTOP, PHONE, chromium, horizontal_overflow, open_page
from tests.dashboard.web_support import HOSTILE, project_settings
from tests.factories import T0, FakeClock, number, open_test_ledger
from tests.views.inbox_support import build_world

#: Chromium's view of the inbox; on the PostgreSQL pass the same pages, the operator and
#: token checks of mark-as-handled and the live update are checked over HTTP by these tests.
pytestmark = pytest.mark.pg_covered_by(
    "tests/dashboard/test_inbox_pages.py::test_the_inbox_shows_each_reply_as_text_with_what_it_answers",
    "tests/dashboard/test_inbox_pages.py::test_marking_handled_takes_the_token_and_says_what_it_did",
    "tests/dashboard/test_inbox_pages.py::test_a_viewer_sees_the_inbox_but_cannot_mark_a_reply",
    "tests/dashboard/test_inbox_pages.py::test_the_inbox_is_sent_again_when_a_reply_is_handled_elsewhere",
    reason="a browser's view of pages whose PostgreSQL reads and writes are checked there")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless, for this module's tests."""
    with chromium() as opened:
        yield opened


def _handled(ledger: Ledger, reply_id: int) -> tuple[str, object] | None:
    with access.read(ledger.engine) as conn:
        return iq.handled_by(conn, reply_id)


def _config() -> str:
    users = user_settings().users  # ana: operator, vic: viewer
    return "".join(f'[dashboard.users.{name}]\nrole = "{user.role}"\n'
                   f'password_hash = "{user.password_hash}"\n\n'
                   for name, user in users.items())


def _sign_in(page: Page, name: str) -> None:
    page.goto("/replies")
    assert "/login" in page.url
    page.fill("#user", name)
    page.fill("#password", PASSWORDS[name])
    page.click("button[type=submit]")
    page.wait_for_selector("#user-name")


def test_hostile_replies_show_as_text_and_the_pages_fit_a_phone(
        browser: Browser, ledger: Ledger, clock: FakeClock, ledger_url: str,
        tmp_path: Path) -> None:
    world = build_world(ledger)
    hostile = world.replies["hostile"]
    settings = project_settings(tmp_path, ledger_url)
    with BackgroundServer(create_app(settings, ledger, clock=clock)) as server:
        for viewport in (PHONE, DESKTOP):
            with open_page(browser, server.base_url, viewport) as (page, watched):
                page.goto("/replies")
                card = page.locator(f"#reply-{hostile}")
                assert card.locator(".reply-text").inner_text() == HOSTILE
                assert card.locator("img").count() == 0 and page.locator("main img").count() == 0
                assert card.get_attribute("data-state") == "to answer"
                assert horizontal_overflow(page) == 0, ("/replies", viewport)
                page.goto(f"/recipients/{number(0)}")
                reply = page.locator(f"#story li[data-reply='{hostile}'] .story-text")
                assert reply.inner_text() == HOSTILE
                assert page.locator("#story img").count() == 0
                assert horizontal_overflow(page) == 0, ("/recipients", viewport)
                page.goto("/recipients")
                page.fill("#recipient-q", "Ana 1")
                page.click("#recipient-go")
                page.click(f"#found li[data-number='{number(1)}'] a")
                page.wait_for_selector("#recipient-title")
                assert page.locator("#recipient-summary").get_attribute(
                    "data-opted-out") == "true"
                assert horizontal_overflow(page) == 0, ("/recipients/…", viewport)
                assert watched.dialogs == [] and watched.errors == [], watched


def test_marking_handled_needs_an_operator_and_the_token(
        browser: Browser, ledger: Ledger, clock: FakeClock, ledger_url: str,
        tmp_path: Path) -> None:
    world = build_world(ledger)
    hostile = world.replies["hostile"]
    settings = project_settings(tmp_path, ledger_url, _config())
    with BackgroundServer(create_app(settings, ledger, clock=clock)) as server:
        with open_page(browser, server.base_url, PHONE) as (page, watched):
            _sign_in(page, "vic")
            page.goto("/replies")
            assert page.locator(f"#reply-{hostile}").is_visible()
            assert page.locator(".handle-button").count() == 0  # a viewer has no button
            token = page.locator("input[name=csrf_token]").first.get_attribute("value")
            assert token  # the viewer's own (its sign-out form's)
            forged = page.request.post(f"/replies/{hostile}/handled",
                                       form={"csrf_token": token}, max_redirects=0)
            assert forged.status == 403
            assert watched.dialogs == [] and watched.errors == []
        assert _handled(ledger, hostile) is None
        with open_page(browser, server.base_url, PHONE) as (page, watched):
            _sign_in(page, "ana")
            page.goto("/replies?state=to+answer")
            for form in ({}, {"csrf_token": "not-the-token"}):
                refused = page.request.post(f"/replies/{hostile}/handled", form=form,
                                            max_redirects=0)
                assert refused.status == 403, form
            assert _handled(ledger, hostile) is None
            page.click(f"#reply-{hostile} .handle-button")  # the page's own form
            page.wait_for_selector("#notice")
            assert page.locator("#notice").inner_text() == \
                f"Reply {hostile} marked as handled by ana."
            assert "state=to+answer" in page.url  # back to the same filter
            assert page.locator(f"#reply-{hostile}").count() == 0  # no longer to answer
            assert horizontal_overflow(page) == 0
            assert watched.dialogs == [] and watched.errors == []
    assert _handled(ledger, hostile) == ("ana", clock())


def test_the_inbox_updates_live(browser: Browser, ledger: Ledger, clock: FakeClock,
                                ledger_url: str, tmp_path: Path) -> None:
    world = build_world(ledger)
    stranger = world.replies["stranger"]
    settings = project_settings(tmp_path, ledger_url)
    app = create_app(settings, ledger, clock=clock, live_every_s=0.2)
    with BackgroundServer(app) as server, \
            open_page(browser, server.base_url, PHONE) as (page, watched):
        page.goto("/replies")
        page.wait_for_selector("#live-state[data-state=on]")
        assert page.locator(f"#reply-{stranger}").get_attribute("data-state") == "to answer"
        with open_test_ledger(ledger_url, clock) as other:  # another process's connection
            mark_handled(other, stranger, "otto", T0)
        page.wait_for_selector(f"#reply-{stranger}[data-state=handled]")
        assert "handled by otto" in page.locator(f"#reply-{stranger} .reply-handled") \
            .inner_text()
        assert page.locator("[data-state-tab='handled']").get_attribute("data-count") == "2"
        assert watched.dialogs == [] and watched.errors == []
