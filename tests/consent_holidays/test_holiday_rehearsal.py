"""Holidays in a rehearsal (simulated clock, the embedded sandbox): nothing goes out on
Christmas, and with ``holidays = "recipient"`` nothing goes to São Paulo numbers on São
Paulo's 9 July while the other states' numbers are sent to."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from scheduler.usecases.rehearsal import rehearse_campaign

SAO_PAULO = ZoneInfo("America/Sao_Paulo")


def _project(root: Path, numbers: list[str], *, channel: str, holidays: str,
             window: str, rate: str) -> Path:
    (root / "data").mkdir()
    rows = ["nome,telefone"] + [f"P{i},{n}" for i, n in enumerate(numbers)]
    (root / "data" / "r.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (root / "campaigns").mkdir()
    path = root / "campaigns" / "feriado.toml"
    senders = 'senders = ["s1"]\n' if channel == "whatsapp" else ""
    path.write_text(
        f'name = "feriado"\nchannel = "{channel}"\n{senders}'
        '[recipients]\nfile = "data/r.csv"\n'
        f'[schedule]\ntimezone = "America/Sao_Paulo"\nwindow = "{window}"\n'
        f'holidays = "{holidays}"\n'
        f'[pace]\nrate = "{rate}"\njitter = "0s-0s"\n'
        '[[steps]]\ntype = "text"\ntext = "Oi {{ nome }}"\n', encoding="utf-8")
    return path


def _days(sent: list[tuple[datetime, str]]) -> dict[date, int]:
    out: dict[date, int] = {}
    for at, _to in sent:
        day = at.astimezone(SAO_PAULO).date()
        out[day] = out.get(day, 0) + 1
    return out


def test_a_rehearsal_across_christmas_sends_nothing_on_christmas(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAMPAIGN_STATE_DIR", str(tmp_path / "real-state"))
    numbers = [f"+55 21 9{80000000 + i}" for i in range(90)]
    path = _project(tmp_path, numbers, channel="whatsapp", holidays="BR",
                    window="09:00-09:30", rate="1/min")
    start = datetime(2026, 12, 24, 12, 0, tzinfo=UTC)  # Thursday 09:00 in São Paulo
    rehearsal = rehearse_campaign(path, start=start)
    days = _days(rehearsal.sent)
    assert date(2026, 12, 25) not in days
    assert days[date(2026, 12, 24)] > 0 and days[date(2026, 12, 26)] > 0
    assert sum(days.values()) == 90
    notes = [e.what for e in rehearsal.timeline]
    assert any(n.startswith("window closed (holiday: Natal); paused until 2026-12-26 09:00")
               for n in notes), notes


def test_with_the_recipients_state_nothing_goes_to_sao_paulo_on_9_july(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAMPAIGN_STATE_DIR", str(tmp_path / "real-state"))
    # DDD 11-19 (São Paulo) and 21 (Rio de Janeiro), alternating
    numbers = [f"+55 {11 + i % 9 if i % 2 else 21} 9{80000000 + i}" for i in range(40)]
    path = _project(tmp_path, numbers, channel="sms", holidays="recipient",
                    window="09:00-20:00", rate="1/min")
    start = datetime(2026, 7, 9, 12, 0, tzinfo=UTC)  # Thursday 9 July, 09:00 local
    rehearsal = rehearse_campaign(path, start=start)
    sao_paulo = [(at, to) for at, to in rehearsal.sent if to[2:4] in
                 {str(d) for d in range(11, 20)}]
    rio = [(at, to) for at, to in rehearsal.sent if to[2:4] == "21"]
    assert len(sao_paulo) == 20 and len(rio) == 20
    assert set(_days(sao_paulo)) == {date(2026, 7, 10)}
    assert set(_days(rio)) == {date(2026, 7, 9)}
    notes = [e.what for e in rehearsal.timeline]
    assert any(n.startswith("holiday: Revolução Constitucionalista in SP:") for n in notes), notes
