"""Live updates: a page's live section is sent again over server-sent events when the
ledger changes, also when another connection (another process) changes it."""

from __future__ import annotations

from pathlib import Path

from scheduler.ledger.runs import Ledger
from tests.dashboard.web_support import (
    events,
    hooks,
    next_update,
    numbers,
    project_settings,
    section,
    served,
)
from tests.factories import FakeClock, make_run, open_test_ledger
from tests.reports.support import ids_by_row, set_rows


def test_a_run_page_is_sent_again_when_another_connection_changes_the_run(
        ledger: Ledger, clock: FakeClock, ledger_url: str, tmp_path: Path) -> None:
    run = make_run(ledger, 4)
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock, live_every_s=0.05) as web, \
            web.stream("GET", f"/runs/{run}/live") as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["server-timing"].startswith("app;dur=")
        stream = events(response)
        first = next_update(stream)
        assert numbers(section(first.data, "counts")) == {"planned": 4}
        assert hooks(first.data, "id")["run-status"] == "planned"
        with open_test_ledger(ledger_url, clock) as other:  # another process's connection
            other.request(run, "pause")
            set_rows(other, ids_by_row(other, run)[:1], state="failed", last_error="gone")
        changed = next_update(stream)
        while "failed" not in numbers(section(changed.data, "counts")):
            changed = next_update(stream)  # the pause alone may have been read first
    assert changed.id != first.id
    assert hooks(changed.data, "id")["run-status"] == "paused"
    assert numbers(section(changed.data, "counts")) == {"planned": 3, "failed": 1}
    assert "gone" in changed.data  # the error, grouped by reason


def test_a_reconnected_stream_sends_nothing_until_something_changes(
        ledger: Ledger, clock: FakeClock, ledger_url: str, tmp_path: Path) -> None:
    run = make_run(ledger, 2)
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock, live_every_s=0.05, keepalive_s=0) as web:
        with web.stream("GET", f"/runs/{run}/live") as response:
            shown = next_update(events(response)).id
        with web.stream("GET", f"/runs/{run}/live",
                        headers={"Last-Event-ID": shown or ""}) as response:
            stream = events(response)
            quiet = next(stream)
            assert quiet.kind == "comment"  # a whole read went by: nothing new to send
            with open_test_ledger(ledger_url, clock) as other:
                other.request(run, "pause")
            update = next_update(stream)
    assert update.id != shown
    assert hooks(update.data, "id")["run-status"] == "paused"


def test_the_overview_is_sent_again_when_a_run_appears(
        ledger: Ledger, clock: FakeClock, ledger_url: str, tmp_path: Path) -> None:
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock, live_every_s=0.05) as web:
        html = web.get("/").text
        assert "no-runs" in hooks(html, "id")
        assert 'data-live-url="/live"' in html
        with web.stream("GET", "/live") as response:
            stream = events(response)
            first = next_update(stream)
            assert hooks(first.data, "data-run") == {}
            with open_test_ledger(ledger_url, clock) as other:
                run = make_run(other, 3, name="nova")
            update = next_update(stream)
    assert set(hooks(update.data, "data-run")) == {str(run)}
    assert "nova" in update.data
