"""`campaign run FILE --rehearse`: a simulated clock, the embedded sandbox, nothing real."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from scheduler.app.rehearsal import rehearse_campaign
from tests.factories import write_project


def test_rehearsal_shows_the_window_pause_and_finishes_on_the_next_day(
        tmp_path: Path, monkeypatch) -> None:
    path = write_project(tmp_path, 120, rate="1/s")
    text = path.read_text(encoding="utf-8").replace(
        '[schedule]\ntimezone = "UTC"\n',
        '[schedule]\ntimezone = "America/Sao_Paulo"\nwindow = "09:00-09:01"\ndays = "mon-fri"\n')
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("CAMPAIGN_STATE_DIR", str(tmp_path / "real-state"))
    start = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)  # Friday 09:00 in São Paulo
    rehearsal = rehearse_campaign(path, start=start)
    notes = [e.what for e in rehearsal.timeline]
    assert any("window closed; paused until 2026-11-30 09:00" in n for n in notes)  # Monday
    assert notes[-1] == "run completed"
    assert rehearsal.sends == 120
    assert rehearsal.finish.astimezone(UTC).date().isoformat() == "2026-11-30"
    assert not os.path.exists(tmp_path / "real-state")  # the configured ledger is untouched
