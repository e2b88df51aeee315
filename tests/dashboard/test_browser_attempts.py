"""In Chromium (Debian's, see ``tests/dashboard/browser.py``), a run's funnel per attempt
fits a phone 390 pixels wide and a desktop: no sideways scrolling, every attempt's row
inside the page, the words of the ledger shown as text."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.ledger.runs import Ledger
from tests.dashboard.browser import DESKTOP, PHONE, chromium, horizontal_overflow, open_page
from tests.dashboard.web_support import project_settings, served
from tests.factories import FakeClock
from tests.views.support import build_family

#: Chromium's layout of the attempts table; on the PostgreSQL pass the page's rows read from
#: PostgreSQL are checked (served over HTTP) by these tests.
pytestmark = pytest.mark.pg_covered_by(
    "tests/dashboard/test_attempts_page.py::test_the_run_page_shows_each_attempt",
    "tests/dashboard/test_attempts_page.py::test_the_ledgers_words_stay_text",
    reason="a browser's layout of a page whose PostgreSQL reads are checked there")

ROWS = """() => Array.from(document.querySelectorAll('#attempts tr[data-attempt]')).map(tr => {
  const box = tr.getBoundingClientRect();
  return {attempt: tr.dataset.attempt, left: box.left, right: box.right,
          visible: tr.checkVisibility(), text: tr.textContent.replace(/\\s+/g, ' ').trim()};
})"""


def test_the_attempts_table_fits_a_phone_and_a_desktop(ledger: Ledger, clock: FakeClock,
                                                       ledger_url: str,
                                                       tmp_path: Path) -> None:
    family = build_family(ledger)
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock) as web, chromium() as browser:
        for viewport in (DESKTOP, PHONE):
            for run_id in (family.parent, family.fallback):
                with open_page(browser, str(web.base_url), viewport) as (page, watched):
                    page.goto(f"/runs/{run_id}")
                    assert horizontal_overflow(page) == 0, (viewport, run_id)
                    rows = page.evaluate(ROWS)
                    assert [r["attempt"] for r in rows] == ["1", "2", "3", "fallback"]
                    for r in rows:
                        assert r["visible"] and r["left"] >= 0, (viewport, r)
                        assert r["right"] <= viewport["width"], (viewport, r)
                    assert rows[-1]["text"].startswith("SMS fallback")
                    assert watched.dialogs == [] and watched.errors == [], watched
