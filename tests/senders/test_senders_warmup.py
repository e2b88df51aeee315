"""``campaign senders`` says today's warm-up cap of each sender on its ramp, from the
project's ``[senders]`` ramps and the sender's warm-up day (text and ``--json``)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import update
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.core import timeutil
from scheduler.ledger import access
from scheduler.ledger.models import Delivery
from scheduler.ledger.queries import sender_profiles as spq
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import ChangeSource, SenderStatus
from scheduler.settings.senders import SenderCare, WarmupProfile
from scheduler.views.senders import add_warmup, read_senders
from tests.factories import T0, make_run

runner = CliRunner()
DAY = timedelta(days=1)
#: T0 is Monday 09:00 in São Paulo (the runs' zone).
MONDAY = T0.date()


@pytest.fixture
def warming(ledger: Ledger) -> Ledger:
    """A run naming s1, s2, s3 and s4: s1 on warm-up day 3 for Monday and sent that
    day; s2 on day 2, throttled; s3 with no profile yet; s4 on day 9 (its ramp done)."""
    run_id = make_run(ledger, 4, senders=("s1", "s2", "s3", "s4"))
    with access.transaction(ledger.engine) as conn:
        spq.ensure_profiles(conn, ["s1", "s2", "s4"], T0 - 5 * DAY)
        spq.advance_warm_day(conn, "s1", MONDAY, 3)
        for row, sender in ((1, "s1"), (2, "s2")):  # each sent one message at T0
            conn.execute(update(Delivery).where(Delivery.run_id == run_id, Delivery.row == row)
                         .values(sender=sender, dispatched_at=T0, state="accepted"))
        spq.advance_warm_day(conn, "s2", MONDAY, 2)
        spq.change_state(conn, "s2", SenderStatus.THROTTLED, "score 60: 429s 12.0% of 50 "
                         "sends", ChangeSource.ENGINE, T0, throttle=0.6)
        spq.advance_warm_day(conn, "s4", MONDAY, 9)
    return ledger


def _caps(ledger: Ledger, care: SenderCare,
          now: datetime) -> dict[str, tuple[int | None, int | None, int | None]]:
    """Each sender's (warm-up day today, ramp length, today's cap)."""
    view = add_warmup(read_senders(ledger, now), care, now)
    return {s.sender: (s.warm_day_today, s.warm_days, s.warm_cap_today) for s in view.senders}


def test_todays_cap_follows_each_senders_day_and_ramp(warming: Ledger) -> None:
    care = SenderCare(warmup="default")
    assert _caps(warming, care, T0) == {
        "s1": (3, 8, 65), "s2": (2, 8, 36), "s3": (1, 8, 20), "s4": (None, None, None)}
    # Tuesday: s1 sent on Monday while warming, so day 4; s2 was throttled, so still day 2
    assert _caps(warming, care, T0 + DAY)["s1"] == (4, 8, 117)
    assert _caps(warming, care, T0 + DAY)["s2"] == (2, 8, 36)
    # 72 hours idle: day 1 again
    assert _caps(warming, care, T0 + 3 * DAY)["s1"] == (1, 8, 20)
    # warm-up off (the default), or off for one sender, or its own ramp
    assert set(_caps(warming, SenderCare(), T0).values()) == {(None, None, None)}
    own = SenderCare(warmup="default", profiles={"gentle": WarmupProfile(first_cap=10,
                     growth=1.5, days=10)}, warmup_of={"s1": "gentle", "s3": "off"})
    caps = _caps(warming, own, T0)
    assert caps["s1"] == (3, 10, 22) and caps["s3"] == (None, None, None)


def test_the_command_says_todays_cap_in_text_and_json(
        warming: Ledger, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "config.toml").write_text('[senders]\nwarmup = "default"\n')
    monkeypatch.setattr(timeutil, "utcnow", lambda: T0 + timedelta(hours=1))
    monkeypatch.setenv("CAMPAIGN_BASE_URL", "http://127.0.0.1:9")  # no limits read
    listed = json.loads(runner.invoke(app, ["senders", "--json"]).stdout)
    by = {s["sender"]: s for s in listed["senders"]}
    assert (by["s1"]["warm_day_today"], by["s1"]["warm_days"],
            by["s1"]["warm_cap_today"]) == (3, 8, 65)
    assert by["s4"]["warm_cap_today"] is None
    # the latest send is the ledger's dispatched row, as the dispatcher's warm-up reads it
    assert datetime.fromisoformat(by["s1"]["last_sent_at"]) == T0
    assert by["s4"]["last_sent_at"] is None
    text = runner.invoke(app, ["senders"]).stdout
    flat = " ".join(line.strip() for line in text.splitlines())
    assert "warm-up day 3 of 8: at most 65 sends today, 1 sent" in flat
    assert "warm-up day 1 of 8: at most 20 sends today" in flat  # s3, new
    assert flat.count("warm-up day") == 3
    assert max(len(line) for line in text.splitlines() if not line.startswith("ledger")) <= 80
