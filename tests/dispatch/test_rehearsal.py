"""`campaign run FILE --rehearse`: a simulated clock, the embedded sandbox, nothing real."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from scheduler.usecases.rehearsal import rehearse_campaign
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


@pytest.mark.slow  # a rehearsal of 1,500 sends (about 10 s of CPU)
def test_a_daily_cap_is_said_when_reached_and_the_window_closes_at_its_end(
        tmp_path: Path, monkeypatch) -> None:
    """1,500 recipients at 60/min with a cap of 1,000 a day in a 08:00-20:00 window: the
    cap is reached at 09:16:39 and the rest waits for the next morning."""
    path = write_project(tmp_path, 1500, rate="60/min")
    text = path.read_text(encoding="utf-8").replace(
        '[schedule]\ntimezone = "UTC"\n',
        '[schedule]\ntimezone = "America/Sao_Paulo"\nwindow = "08:00-20:00"\n').replace(
        'rate = "60/min"\n', 'rate = "60/min"\ndaily_cap = 1000\n')
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("CAMPAIGN_STATE_DIR", str(tmp_path / "real-state"))
    start = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)  # Tuesday 09:00 in São Paulo
    rehearsal = rehearse_campaign(path, start=start)
    timeline = [(e.at.astimezone(UTC), e.what) for e in rehearsal.timeline]
    cap = (datetime(2026, 12, 1, 12, 16, 39, tzinfo=UTC),  # 09:16:39: the 1,000th send
           "sender s1 reached its daily cap of 1,000 at 09:16 -03:00; sends again "
           "2026-12-02 08:00 -03:00")
    closed = (datetime(2026, 12, 1, 23, 0, tzinfo=UTC),  # 20:00, not the next would-be send
              "window closed; paused until 2026-12-02 08:00 -03:00")
    assert timeline == [(start, "dispatch started"), cap, closed,
                        (datetime(2026, 12, 2, 11, 0, tzinfo=UTC), "window open; resumed"),
                        (datetime(2026, 12, 2, 11, 8, 19, tzinfo=UTC), "run completed")]
    assert rehearsal.sends == 1500


def test_a_rehearsal_starts_each_warming_sender_on_its_day_in_the_project_ledger(
        tmp_path: Path, monkeypatch) -> None:
    from datetime import date

    from scheduler.ledger import access
    from scheduler.ledger.db import open_ledger
    from scheduler.ledger.queries import sender_profiles as spq
    from scheduler.settings.load import load_settings

    path = write_project(tmp_path, 100, rate="1/s")
    (tmp_path / "config.toml").write_text('[senders]\nwarmup = "default"\n', encoding="utf-8")
    monkeypatch.setenv("CAMPAIGN_STATE_DIR", str(tmp_path / "state"))
    start = datetime(2027, 3, 8, 12, 0, tzinfo=UTC)
    engine = open_ledger(load_settings(near=path).resolved_database_url())
    try:  # the project's ledger: s1 is on day 3 of its ramp
        with access.transaction(engine, "a warming sender") as conn:
            spq.ensure_profiles(conn, ["s1"], start)
            spq.advance_warm_day(conn, "s1", date(2027, 3, 7), 3)
    finally:
        engine.dispose()
    rehearsal = rehearse_campaign(path, start=start)
    notes = [e.what for e in rehearsal.timeline if e.kind == "warming"]
    assert notes[0] == "s1 warming: day 3 of 8, 65 today"
    assert rehearsal.sends == 100  # 65 on the first day, the rest the next day
    assert rehearsal.finish.date() > start.date()
