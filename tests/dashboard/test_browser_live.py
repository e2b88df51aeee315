"""A real run watched and steered in Chromium: ``campaign run`` sends through a sandbox, each
in a process of its own, while ``campaign dashboard`` (a third process) shows it.

One run serves the whole story (a run takes seconds to start): the page's counts are a
state the ledger really had, and they follow it without a reload; a reply, a campaign name
and a recipient's name holding markup stay text; the pause button stops the sends at the
sandbox within 3 s; the resume button starts them again; the cancel button ends the run;
then every page, at 1280x800 and on a phone 390 pixels wide, has no sideways scrolling
and shows its key numbers.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from tests.app.support import wait_for
from tests.channels.support import SandboxProcess, sandbox_process
from tests.dashboard.browser import (
    DESKTOP,
    PHONE,
    CountsWatch,
    chromium,
    dashboard_process,
    horizontal_overflow,
    kill_owner,
    ledger_counts,
    live_project,
    open_page,
    run_process,
    run_row,
    service_env,
)

#: A reply a recipient writes back, and a campaign name: markup that must stay text.
#: The page in Chromium following and steering a run; on the PostgreSQL pass the live page
#: (sent again when another connection changes the run), its pause and cancel buttons'
#: effect, the resume it starts, and a run paused, resumed and cancelled from other
#: processes are checked by these tests.
pytestmark = pytest.mark.pg_covered_by(
    "tests/dashboard/test_live.py::test_a_run_page_is_sent_again_when_another_connection_changes_the_run",
    "tests/dashboard/test_pages.py::test_pause_and_cancel_change_the_run_and_say_so",
    "tests/dashboard/test_resume.py::test_resume_starts_a_campaign_resume_that_finishes_the_run",
    "tests/dispatch/test_cli_runs.py::test_pause_resume_and_cancel_from_other_processes",
    reason="a browser following pages whose PostgreSQL reads and writes are checked there")

REPLY = 'Quero! <script>alert("reply")</script><img src=x onerror=alert("img")>'
CAMPAIGN_NAME = 'ofertas <b>da semana</b> <img src=x onerror=alert("name")>'
RECIPIENT_NAME = '<script>alert("nome")</script><img src=x onerror=alert("nome")>'
#: How fast the run sends (one sender): slow enough to watch, quick enough to see a pause.
RATE_PER_S = 2
#: The page follows the ledger within 2 s (the issue's promise), read here with a second
#: of slack for the test's own sampling on a loaded machine.
FOLLOWS_WITHIN_S = 3.0


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless, for this module's tests."""
    with chromium() as opened:
        yield opened


def _sent_at(box: SandboxProcess) -> list[datetime]:
    """When the sandbox took each text send (its own record)."""
    return [datetime.fromisoformat(s["at"].replace("Z", "+00:00")) for s in box.sends()
            if s["path"].endswith("/messages/send/text")]


def _page_counts(page: Page) -> dict[str, int]:
    """The run page's deliveries by state (``#counts td[data-count=STATE]``), zeros left out."""
    cells = page.eval_on_selector_all(
        "#counts td[data-count]",
        "cells => cells.map(cell => [cell.dataset.count, cell.textContent])")
    found = {state: int(re.sub(r"\D", "", text)) for state, text in cells}
    return {state: n for state, n in found.items() if n}


def _page_matches_the_ledger(page: Page, watch: CountsWatch, *,
                             more_done_than: int) -> dict[str, int]:
    """Poll until the page shows, without a reload, counts the ledger held in the last
    :data:`FOLLOWS_WITHIN_S` seconds (exactly: a state it really had, not a mix of two
    moments), with more than ``more_done_than`` rows past ``planned``; those counts."""
    deadline = time.monotonic() + 30
    shown: dict[str, int] = {}
    while time.monotonic() < deadline:
        shown = _page_counts(page)
        done = sum(n for state, n in shown.items() if state != "planned")
        if done > more_done_than and watch.had(shown, within_s=FOLLOWS_WITHIN_S):
            return shown
        time.sleep(0.1)
    raise AssertionError(f"the page shows {shown}, the ledger has {watch.latest()}")


def _wait_for_status(ledger_url: str, run_id: int, status: str, root: Path) -> None:
    """Wait until the ledger says the run is ``status``; else fail with what it is and the
    log of the ``campaign resume`` the dashboard started."""
    deadline = time.monotonic() + 30
    while (now := run_row(ledger_url, run_id))["status"] != status:
        if time.monotonic() > deadline:
            logs = "".join(log.read_text(encoding="utf-8")
                           for log in sorted((root / "state" / "logs").glob("*.log")))
            raise AssertionError(f"run {run_id} is {now['status']} (control "
                                 f"{now['control']}), not {status}; resume's log:\n{logs}")
        time.sleep(0.1)


@pytest.mark.slow
def test_a_run_in_another_process_is_followed_and_steered_from_the_page(
        browser: Browser, ledger_url: str, tmp_path: Path) -> None:
    with sandbox_process() as box:
        box.create_session("s1")
        box.set_faults(reply_rate=0.0)  # the only reply is the test's
        campaign = live_project(tmp_path / "shop", 200, rate=f"{RATE_PER_S}/s",
                                name="ofertas", names={0: RECIPIENT_NAME})
        campaign.write_text(campaign.read_text(encoding="utf-8").replace(
            'name = "ofertas"', f"name = '{CAMPAIGN_NAME}'"), encoding="utf-8")
        env = service_env(box.base_url, box.api_key, ledger_url)
        run_id = 0
        try:
            with run_process(campaign, env) as run, \
                    dashboard_process(campaign.parents[1], env) as dash, \
                    open_page(browser, dash.url) as (page, watched):
                wait_for(lambda: bool(run_row(ledger_url)), timeout=60)
                run_id = run_row(ledger_url)["id"]
                page.goto(f"/runs/{run_id}")
                page.wait_for_selector("#live-state[data-state=on]")

                # the counts are the ledger's, and follow it with no reload
                with CountsWatch(ledger_url, run_id) as watch:
                    first = _page_matches_the_ledger(page, watch, more_done_than=0)
                    done = sum(n for state, n in first.items() if state != "planned")
                    _page_matches_the_ledger(page, watch, more_done_than=done + 2)

                # a reply holding markup is shown as text, as is the campaign's name and
                # the name (from the CSV) of the recipient who replied
                to = next(s["to"] for s in box.sends()
                          if 'alert("nome")' in str(s["body"].get("text", "")))
                box.http.post("/sandbox/sessions/s1/receive",
                              json={"from": to, "text": REPLY}).raise_for_status()
                reply = page.locator("#events td.text", has_text="Quero!")
                reply.wait_for()
                assert reply.inner_text() == REPLY
                replied = page.locator("#events tr", has=page.locator(
                    "td.text", has_text="Quero!")).locator("td.recipient")
                assert replied.inner_text() == RECIPIENT_NAME
                assert page.locator("#run-title .name").inner_text() == CAMPAIGN_NAME
                assert page.locator("#main script, #main img[onerror], .name b").count() == 0

                # pause: the sandbox takes nothing more 3 s after the click
                clicked = datetime.now(UTC)
                page.click("#pause-button")
                run.proc.wait(timeout=30)  # the run's process stops when it pauses
                after_click = [at for at in _sent_at(box) if at > clicked]
                assert all(at <= clicked + timedelta(seconds=3) for at in after_click), (
                    clicked, after_click)
                assert len(after_click) <= 3 * RATE_PER_S + 1
                page.wait_for_selector("#run-status[data-status=paused]")
                assert run_row(ledger_url, run_id)["status"] == "paused"
                stopped = len(_sent_at(box))

                # resume: a `campaign resume` the dashboard starts sends again
                page.click("#resume-button")
                wait_for(lambda: len(_sent_at(box)) >= stopped + 2, timeout=60)
                page.wait_for_selector("#run-status[data-status=running]")

                # cancel (behind a disclosure): the run ends, its unsent rows skipped
                page.click("#cancel-details summary")
                page.click("#cancel-button")
                _wait_for_status(ledger_url, run_id, "cancelled", campaign.parents[1])
                page.wait_for_selector("#run-status[data-status=cancelled]")
                counts = ledger_counts(ledger_url, run_id)
                assert "planned" not in counts and counts["skipped"] > 0
                assert watched.dialogs == [] and watched.errors == []
                _check_layout(browser, dash.url, run_id)
        finally:
            if run_id:
                kill_owner(ledger_url, run_id)


def _key_numbers(run_id: int) -> dict[str, tuple[str, ...]]:
    """Each page, and the numbers a person opens it for."""
    return {
        "/": ("#sends-today", f"#runs tr[data-run='{run_id}'] [data-count=done]",
              f"#runs tr[data-run='{run_id}'] [data-count=total]"),
        f"/runs/{run_id}": ("#run-status", "#progress-text [data-count=done]",
                            "#progress-text [data-count=total]",
                            "#counts td[data-count]", "#funnel td[data-funnel=sent]"),
        "/senders": ("#senders tr[data-sender=s1] td[data-count=sends-today]",),
        "/campaigns": ("#campaigns [data-count=valid]", "#campaigns [data-count=deliveries]"),
    }


#: Where an element is once scrolled to, read in one step (the live section may be swapped
#: for a new copy between two steps of Playwright's own actions).
PLACEMENT = """selector => {
  const found = document.querySelector(selector);
  if (!found) return null;
  found.scrollIntoView({block: "center", inline: "nearest"});
  const box = found.getBoundingClientRect();
  return {x: box.x, width: box.width, height: box.height,
          visible: found.checkVisibility({checkOpacity: true, checkVisibilityCSS: true}),
          text: found.textContent.trim()};
}"""


def _check_layout(browser: Browser, url: str, run_id: int) -> None:
    """At 1280x800 and at 390 pixels wide, every page fits the width (no sideways
    scrolling) and its key numbers are shown inside it; markup from outside stays text."""
    for viewport in (DESKTOP, PHONE):
        with open_page(browser, url, viewport) as (page, watched):
            for path, numbers in _key_numbers(run_id).items():
                page.goto(path)
                assert horizontal_overflow(page) == 0, (viewport, path)
                for selector in numbers:
                    found = page.evaluate(PLACEMENT, selector)
                    where = (viewport, path, selector, found)
                    assert found and found["visible"] and found["height"] > 0, where
                    assert found["x"] >= 0, where
                    assert found["x"] + found["width"] <= viewport["width"], where
                    assert found["text"], where
                assert page.locator("#main script, #main img[onerror], .name b").count() == 0, path
            assert watched.dialogs == [] and watched.errors == [], watched
