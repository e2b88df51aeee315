"""Retry rules in a rehearsal (simulated clock, the embedded sandbox with scripted outcomes
per number): a call not answered is made again after its rule's delay, only inside the
rule's window in the recipient's zone, never past the rule's maximum; a busy line on its
own delay; an opt-out during the first call ends the recipient's attempts."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from scheduler.usecases.rehearsal import rehearse_campaign
from tests.recycling.support import (
    number,
    phone,
    scripted_rehearsal,
    voice_calls,
    write_voice_project,
)

SAO_PAULO = ZoneInfo("America/Sao_Paulo")
#: Monday 2027-03-08 17:30 in São Paulo (-03:00, no daylight saving time).
START = datetime(2027, 3, 8, 20, 30, tzinfo=UTC)
RULES = ('[\n  { on = "no_answer", delay = "2h", max_attempts = 3, window = "09:00-20:00" },\n'
         '  { on = "busy", delay = "10m", max_attempts = 5 },\n]')
#: What each recipient's calls do, in order (the last repeats).
SCRIPT = {
    0: ["no_answer"],                            # never answers
    1: ["busy"],                                 # always busy
    2: ["busy", "no_answer", "answered:30"],     # each outcome on its own delay
    3: ["failed"],                               # rejected: no rule for it
    4: ["answered:30"],                          # reached at once
    5: ["answered:5", "answered:30"],            # shorter than min_talk: not reached
    6: ["answered:4:9", "no_answer"],            # presses the opt-out key, hangs up at 4 s
}


def local(moment: datetime) -> datetime:
    return moment.astimezone(SAO_PAULO)


def gaps(calls: list[datetime]) -> list[timedelta]:
    return [later - earlier for earlier, later in itertools.pairwise(calls)]


@pytest.fixture(scope="module")
def rehearsed(tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[dict[str, list[datetime]], list[str]]:
    """The calls each number got in one rehearsal of :data:`SCRIPT`, and its timeline."""
    root = tmp_path_factory.mktemp("retries")
    path = write_voice_project(root, [phone(i) for i in SCRIPT], retry=RULES,
                               min_talk="10s", opt_out_digit="9", window="08:00-22:00")
    script = {number(i): outcomes for i, outcomes in SCRIPT.items()}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CAMPAIGN_STATE_DIR", str(root / "real-state"))
        with scripted_rehearsal(patch, voice_outcomes_by_number=script) as boxes:
            result = rehearse_campaign(path, start=START)
    [box] = boxes
    calls = voice_calls(box.world.sends)
    notes = [entry.what for entry in result.timeline]
    assert notes[-1] == "run completed", notes
    return calls, notes


def test_no_answer_is_called_again_after_the_delay_inside_the_window_up_to_the_max(
        rehearsed: tuple[dict[str, list[datetime]], list[str]]) -> None:
    calls, notes = rehearsed
    never = calls[number(0)]
    assert len(never) == 3  # the script would go on: the rule's maximum stops it
    first, second, third = (local(c) for c in never)
    assert first.time() < time(17, 31)
    assert second - first >= timedelta(hours=2)
    assert second.time() < time(20, 0)  # 19:30-ish: inside 09:00-20:00
    # 2 h after the second call is 21:30, past the rule's window (the campaign's own
    # window runs to 22:00): the third call waits for 09:00 the next day
    assert third.date() == first.date() + timedelta(days=1)
    assert time(9, 0) <= third.time() < time(9, 5)
    assert any("not answered" in n and "called again" in n and "(attempt 2)" in n
               for n in notes), notes
    assert any("(attempt 3)" in n for n in notes), notes


def test_busy_is_called_again_on_its_own_delay_up_to_its_max(
        rehearsed: tuple[dict[str, list[datetime]], list[str]]) -> None:
    calls, notes = rehearsed
    busy = calls[number(1)]
    assert len(busy) == 5
    # each busy call made again 10 minutes after it was judged busy (moments after it ended)
    assert all(timedelta(minutes=10) <= gap < timedelta(minutes=15) for gap in gaps(busy)), (
        [str(gap) for gap in gaps(busy)], notes)
    mixed = calls[number(2)]  # busy, then no answer, then answered
    assert len(mixed) == 3
    to_second, to_third = gaps(mixed)
    assert timedelta(minutes=10) <= to_second < timedelta(minutes=15), (str(to_second), notes)
    assert to_third >= timedelta(hours=2)
    assert any("busy" in n and "called again" in n for n in notes), notes


def test_reached_failed_and_opted_out_recipients_get_no_more_calls(
        rehearsed: tuple[dict[str, list[datetime]], list[str]]) -> None:
    calls, _notes = rehearsed
    assert len(calls[number(3)]) == 1  # rejected (cause 21): no rule retries "failed"
    assert len(calls[number(4)]) == 1  # answered for 30 s: reached
    short = calls[number(5)]  # 5 s < min_talk 10 s: not reached, called again 2 h later
    assert len(short) == 2 and short[1] - short[0] >= timedelta(hours=2)
    # pressed the opt-out key on a 4 s call (short too): opted out, never called again
    assert len(calls[number(6)]) == 1
    assert set(calls) == {number(i) for i in SCRIPT}


SMS_SCRIPT = {
    0: ["NETWORK_ERROR", "NO_COVERAGE", "delivered"],  # delivered at the 3rd
    1: ["NETWORK_ERROR"],                              # never: the rule's maximum stops it
    2: ["LANDLINE"],                                   # terminal: never sent again
    3: ["NOT_RECEIVED"],                               # not a code of this rule
    4: ["delivered"],
}


def test_undelivered_sms_is_sent_again_only_for_the_rules_codes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAMPAIGN_STATE_DIR", str(tmp_path / "real-state"))
    for folder in ("campaigns", "data", "templates"):
        (tmp_path / folder).mkdir()
    rows = ["nome;telefone"] + [f"Pessoa {i};{phone(i)}" for i in SMS_SCRIPT]
    (tmp_path / "data" / "sms.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    path = tmp_path / "campaigns" / "sms.toml"
    path.write_text(
        'name = "sms-retry"\nchannel = "sms"\n\n'
        '[recipients]\nfile = "data/sms.csv"\nphone_column = "telefone"\n'
        'default_country = "BR"\n\n'
        '[schedule]\ntimezone = "America/Sao_Paulo"\nwindow = "08:00-22:00"\n\n'
        '[pace]\nrate = "5/s"\n\n'
        '[[steps]]\ntext = "Oi {{ nome }}, sua fatura chegou."\n'
        'retry = [{ on = "undelivered", codes = ["NETWORK_ERROR", "NO_COVERAGE"], '
        'delay = "1h", max_attempts = 3 }]\n', encoding="utf-8")
    script = {number(i): outcomes for i, outcomes in SMS_SCRIPT.items()}
    with scripted_rehearsal(monkeypatch, sms_outcomes_by_number=script,
                            sms_report_delay_ms=(5, 20)) as boxes:
        result = rehearse_campaign(path, start=START)
    assert [e.what for e in result.timeline][-1] == "run completed"
    [box] = boxes
    sent: dict[str, list[dict[str, object]]] = {}
    for outcome in box.account.sms.outcomes:
        sent.setdefault(outcome["to"], []).append(outcome)
    assert {to: len(got) for to, got in sent.items()} == {
        number(0): 3, number(1): 3, number(2): 1, number(3): 1, number(4): 1}
    sends = [s for s in box.world.sends if "/sms/" in s["path"]]
    moments: dict[str, list[datetime]] = {}
    for send in sends:
        at = datetime.fromisoformat(str(send["at"]).replace("Z", "+00:00"))
        for to in send["to"] if isinstance(send["to"], list) else [send["to"]]:
            moments.setdefault(to, []).append(at)
    for i in (0, 1):  # sent again an hour after the report (moments after the send)
        assert all(timedelta(hours=1) <= gap < timedelta(hours=1, minutes=5)
                   for gap in gaps(moments[number(i)])), [str(g) for g in gaps(moments[number(i)])]
