"""A run's page shows its funnel per attempt and channel (issue 25) as ``campaign status``
does: each attempt with the rule that made it, the SMS fallback, what is due and what
awaits a verdict; a fallback run's page shows its parent's; the ledger's words are
escaped. The real app on a loopback port."""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import update

from scheduler.core.time_words import local_time
from scheduler.ledger import access
from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.runs import Ledger
from tests.dashboard.web_support import hooks, project_settings, section, served
from tests.factories import FakeClock, make_run
from tests.views.support import DUE, ZONE, build_family


def table(html: str) -> dict[str, list[str]]:
    """The attempts table: ``{data-attempt: [each cell's text]}``."""
    body = html[:html.index("</table>")]
    out = {}
    for attempt, row in re.findall(r'<tr data-step="\d+" data-attempt="([^"]+)">(.*?)</tr>',
                                   body, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        out[attempt] = [" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in cells]
    return out


def test_the_run_page_shows_each_attempt(ledger: Ledger, clock: FakeClock, ledger_url: str,
                                         tmp_path: Path) -> None:
    family = build_family(ledger)
    plain = make_run(ledger, 2)
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock) as web:
        page = web.get(f"/runs/{family.parent}").text
        fragment = web.get(f"/runs/{family.parent}/fragment").text
        child = web.get(f"/runs/{family.fallback}").text
        none = web.get(f"/runs/{plain}").text
    shown = section(page, "attempts")
    rows = table(shown)
    assert rows == {"1": ["1st", "9 of 10", "4 answered", "1"],
                    "2": ["2nd on no answer 3, busy 1", "4", "1 answered", "0"],
                    "3": ["3rd on no answer 1", "0 of 1", "0 answered", "1"],
                    "fallback": ["SMS fallback", "1", "1 delivered", "0"]}
    assert f"1</span> due from {local_time(DUE, ZONE)}" in shown
    assert hooks(shown, "data-attempts") == {"due": "1", "awaiting": "2"}
    assert 'id="attempts"' in fragment  # the live section shows it too
    assert table(section(child, "attempts")) == rows
    assert f'href="/runs/{family.parent}"' in section(child, "attempts-of")
    assert 'id="attempts"' not in none


def test_the_ledgers_words_stay_text(ledger: Ledger, clock: FakeClock, ledger_url: str,
                                     tmp_path: Path) -> None:
    family = build_family(ledger)
    with access.transaction(ledger.engine, "test") as conn:
        conn.execute(update(deliveries).where(deliveries.c.rule == "busy")
                     .values(rule="<img src=x onerror=alert(1)>"))
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock) as web:
        shown = section(web.get(f"/runs/{family.parent}").text, "attempts")
    assert "<img" not in shown
    assert "&lt;img src=x onerror=alert(1)&gt; 1" in shown
