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


def _two_zone_project(tmp_path: Path, *, rate: str, latest: str | None) -> Path:
    """60 recipients, half in São Paulo and half in Manaus (an hour behind), each sent in
    their own time zone between 09:00 and 20:00."""
    rows = ["nome,telefone"] + [f"P{i},+55 {'11' if i % 2 else '92'} 9{80000000 + i}"
                                for i in range(60)]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "r.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "campaigns").mkdir()
    path = tmp_path / "campaigns" / "tz.toml"
    path.write_text(
        'name = "tz"\nsenders = ["s1"]\nrecipient_timezone = true\n'
        '[recipients]\nfile = "data/r.csv"\n'
        '[schedule]\ntimezone = "America/Sao_Paulo"\nwindow = "09:00-20:00"\n'
        + (f'latest = "{latest}"\n' if latest else "")
        + f'[pace]\nrate = "{rate}"\njitter = "0s-0s"\n'
        '[[steps]]\ntype = "text"\ntext = "Oi {{ nome }}"\n', encoding="utf-8")
    return path


def test_what_is_not_sent_expires_at_the_latest_send_time_not_at_the_next_due_time(
        tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CAMPAIGN_STATE_DIR", str(tmp_path / "real-state"))
    path = _two_zone_project(tmp_path, rate="7/h", latest="20:00")  # a send every 8'34"
    start = datetime(2027, 3, 8, 22, 30, tzinfo=UTC)  # 19:30 in São Paulo
    rehearsal = rehearse_campaign(path, start=start)
    expiry = [e for e in rehearsal.timeline if "expired" in e.what]
    assert len(expiry) == 1
    assert expiry[0].at == datetime(2027, 3, 8, 23, 0, tzinfo=UTC)  # 20:00, not 20:04:17
    assert rehearsal.result.counts == {"accepted": 4, "expired": 56}


def test_the_timeline_says_when_recipients_own_time_zones_hold_the_rest_back(
        tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CAMPAIGN_STATE_DIR", str(tmp_path / "real-state"))
    path = _two_zone_project(tmp_path, rate="1/min", latest=None)
    rehearsal = rehearse_campaign(path, start=datetime(2027, 3, 8, 22, 30, tzinfo=UTC))
    notes = [e.what for e in rehearsal.timeline]
    waiting = [n for n in notes if n.startswith("recipients' own time zones: no recipient")]
    assert waiting == ["recipients' own time zones: no recipient's window is open; 15 "
                       "deliveries wait, the first until 2027-03-09 09:00 (America/Sao_Paulo)"]
    resumed = notes.index("recipients' own time zones: a window opened; sending resumed")
    assert notes.index(waiting[0]) < resumed < notes.index("run completed")
    assert rehearsal.sends == 60
