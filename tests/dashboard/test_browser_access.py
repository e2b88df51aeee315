"""Logins in Chromium: a viewer sees every number and no button, and an action forged by a
viewer, or by anyone without the session's CSRF token, is refused with 403 and changes
nothing in the ledger."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from scheduler.dashboard.passwords import hash_password
from tests.app.support import clean_env
from tests.dashboard.browser import chromium, dashboard_process, open_page, run_row
from tests.factories import make_run, open_test_ledger

PASSWORDS = {"vera": "viewer-pass-1", "otto": "operator-pass-1"}
#: Every control a run's page may offer an operator.
CONTROLS = ("#actions", "#pause-button", "#resume-button", "#cancel-button",
            "#resend-failed", "#resend-unproven")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless, for this module's tests."""
    with chromium() as opened:
        yield opened


def _project(root: Path) -> tuple[str, int]:
    """A project whose config.toml has a viewer (vera) and an operator (otto), and whose
    ledger holds a planned run; the ledger's URL and the run's id."""
    (root / "state").mkdir(parents=True)
    (root / "config.toml").write_text(
        '[dashboard.users.vera]\nrole = "viewer"\n'
        f'password_hash = "{hash_password(PASSWORDS["vera"])}"\n'
        '[dashboard.users.otto]\nrole = "operator"\n'
        f'password_hash = "{hash_password(PASSWORDS["otto"])}"\n', encoding="utf-8")
    url = f"sqlite:///{root / 'state' / 'campaign.db'}"
    with open_test_ledger(url) as ledger:
        run_id = make_run(ledger, 12, name="boas-vindas")
    return url, run_id


def _sign_in(page: Page, name: str) -> None:
    page.goto("/")
    assert "/login" in page.url  # logins are configured: nothing shows before one
    page.fill("#user", name)
    page.fill("#password", PASSWORDS[name])
    page.click("button[type=submit]")
    page.wait_for_selector("#user-name")


def _token(page: Page) -> str:
    """The session's CSRF token, as the page's own forms carry it."""
    value = page.locator("input[name=csrf_token]").first.get_attribute("value")
    assert value
    return value


@pytest.mark.slow
def test_a_viewer_sees_no_button_and_a_forged_action_is_refused(
        browser: Browser, tmp_path: Path) -> None:
    root = tmp_path / "shop"
    url, run_id = _project(root)
    before = run_row(url, run_id)
    with dashboard_process(root, clean_env()) as dash:
        with open_page(browser, dash.url) as (page, watched):
            _sign_in(page, "vera")
            page.goto(f"/runs/{run_id}")
            assert page.locator("#user-name").get_attribute("data-role") == "viewer"
            assert page.locator("[data-count=total]").first.inner_text() == "12"
            for control in CONTROLS:
                assert page.locator(control).count() == 0, control
            # the only form a viewer has is signing out
            actions = page.eval_on_selector_all("form[method=post]",
                                                "forms => forms.map(f => f.action)")
            assert [a.removeprefix(dash.url) for a in actions] == ["/logout"]
            # a pause forged by the viewer, even with its own valid token: 403
            for action in ("pause", "cancel", "resume"):
                forged = page.request.post(f"/runs/{run_id}/{action}",
                                           form={"csrf_token": _token(page)},
                                           max_redirects=0)
                assert forged.status == 403, (action, forged.status)
            assert watched.dialogs == [] and watched.errors == []

        with open_page(browser, dash.url) as (page, _watched):
            _sign_in(page, "otto")
            page.goto(f"/runs/{run_id}")
            assert page.locator("#pause-button").is_visible()  # an operator has buttons
            # the operator's session without its token (a form posted from another site)
            for token in (None, "not-the-token"):
                form = {} if token is None else {"csrf_token": token}
                forged = page.request.post(f"/runs/{run_id}/pause", form=form,
                                           max_redirects=0)
                assert forged.status == 403, (token, forged.status)
            after = run_row(url, run_id)
            assert (after["status"], after["control"]) == (before["status"], before["control"])
            # the same action through the page's own form goes through
            page.click("#pause-button")
            page.wait_for_selector("#run-status[data-status=paused]")
    assert run_row(url, run_id)["status"] == "paused"
