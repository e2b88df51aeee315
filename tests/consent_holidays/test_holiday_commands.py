"""``validate`` and ``plan`` with ``[schedule] holidays``: an unknown code is refused with a
clear error; the plan's estimate says which holiday it waits over."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.incli import campaign


def _project(root: Path, holidays: str, channel: str = "sms") -> Path:
    (root / "data").mkdir()
    rows = ["nome,telefone"] + [f"P{i},+55 21 9{80000000 + i}" for i in range(90)]
    (root / "data" / "r.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (root / "campaigns").mkdir()
    path = root / "campaigns" / "x.toml"
    senders = 'senders = ["s1"]\n' if channel == "whatsapp" else ""
    path.write_text(
        f'name = "x"\nchannel = "{channel}"\n{senders}[recipients]\nfile = "data/r.csv"\n'
        '[schedule]\ntimezone = "America/Sao_Paulo"\nwindow = "09:00-09:30"\n'
        f'holidays = "{holidays}"\n[pace]\nrate = "1/min"\n'
        '[[steps]]\ntext = "Oi {{ nome }}"\n', encoding="utf-8")
    return path


@pytest.mark.parametrize(("code", "said"), [
    ("XX", "unknown holiday code 'XX'"),
    ("BR-ZZ", "BR has no state 'ZZ'"),
])
def test_validate_rejects_an_unknown_holiday_code(tmp_path: Path, code: str, said: str) -> None:
    path = _project(tmp_path, code)
    done = campaign("validate", str(path), cwd=tmp_path)
    assert done.returncode == 1
    out = done.stdout + done.stderr
    assert "[schedule.holidays]" in out and said in out
    assert "Traceback" not in out


def test_recipient_holidays_are_for_sms_and_voice() -> None:
    from pydantic import ValidationError

    from scheduler.campaign.definition import CampaignSpec

    spec = {"name": "x", "channel": "whatsapp", "senders": ["s1"],
            "recipients": {"file": "r.csv"}, "schedule": {"holidays": "recipient"},
            "steps": [{"text": "Oi"}]}
    with pytest.raises(ValidationError, match="reads the state from an SMS or voice"):
        CampaignSpec.model_validate(spec)
    sms = CampaignSpec.model_validate(spec | {"channel": "sms", "senders": []})
    assert sms.schedule.holidays == "recipient"


def test_the_plans_estimate_waits_over_christmas_and_says_so(tmp_path: Path) -> None:
    path = _project(tmp_path, "BR")
    start = "2026-12-24T09:00:00-03:00"
    report = json.loads(campaign("plan", str(path), "--start", start, "--json",
                                 cwd=tmp_path).stdout)
    assert report["holidays_waited"] == [{"date": "2026-12-25", "name": "Natal"}]
    assert report["finish"].startswith("2026-12-27T12:29")  # 30 on the 24th, 26th, 27th
    text = campaign("plan", str(path), "--start", start, cwd=tmp_path).stdout
    assert "holiday: Natal (2026-12-25): no sends that day" in text
