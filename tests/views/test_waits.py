"""Why a run waits and whether it looks stuck: the pure rules of ``scheduler.views.waits``
at fixed datetimes (09:00 in São Paulo is 12:00 UTC)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from scheduler.dispatch.results import CapWait
from scheduler.dispatch.windows import SendWindow
from scheduler.views.run_models import SenderGlance
from scheduler.views.waits import (
    STUCK_AFTER_AT_LEAST,
    RunFacts,
    allowed_idle,
    judge_stuck,
    run_waits,
)

ZONE = "America/Sao_Paulo"
#: Monday 23 Nov 2026, 12:00 UTC.
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def running(**changes: object) -> RunFacts:
    """A running run of 1,000 rows left through two healthy senders at 1/s each, its last
    send 3 s ago."""
    facts = RunFacts(run_id=7, status="running", timezone=ZONE, planned=1_000,
                     started_at=NOW - timedelta(hours=1),
                     senders=[SenderGlance(sender="s1", state="healthy"),
                              SenderGlance(sender="s2", state="healthy")],
                     planned_rate=2.0, last_send_at=NOW - timedelta(seconds=3))
    return replace(facts, **changes)


def kinds(facts: RunFacts, now: datetime = NOW) -> list[str]:
    return [w.kind for w in run_waits(facts, now)]


def test_a_run_sending_at_its_pace_waits_for_nothing_and_is_not_stuck() -> None:
    facts = running()
    assert run_waits(facts, NOW) == []
    stuck = judge_stuck(facts, [], NOW)
    assert not stuck.stuck and stuck.reason == "it sends at its pace"
    assert stuck.idle_s == 3.0


def test_a_paused_run_says_so_and_how_to_resume_it() -> None:
    waits = run_waits(running(status="paused"), NOW)
    assert [(w.kind, w.advice) for w in waits] == [("paused", "`campaign resume 7`")]
    assert not judge_stuck(running(status="paused", last_send_at=NOW - timedelta(days=1)),
                           waits, NOW).stuck


def test_a_finished_run_waits_for_nothing() -> None:
    assert run_waits(running(status="completed", planned=0), NOW) == []


def test_a_closed_window_says_when_it_opens_in_the_campaigns_zone() -> None:
    window = SendWindow.parse("10:00-18:00", tz=ZONE)  # opens at 13:00 UTC
    facts = running(window=window, last_send_at=NOW - timedelta(hours=14))
    [wait] = run_waits(facts, NOW)
    assert wait.kind == "window" and wait.until == NOW + timedelta(hours=1)
    assert wait.text.endswith("it opens 2026-11-23 10:00 -03:00 (in 60 min)")
    stuck = judge_stuck(facts, [wait], NOW)
    assert not stuck.stuck and stuck.reason.startswith("it waits: the sending window")


def test_rows_due_later_wait_for_their_time() -> None:
    facts = running(next_due=NOW + timedelta(minutes=30), last_send_at=None)
    [wait] = run_waits(facts, NOW)
    assert (wait.kind, wait.until) == ("scheduled", NOW + timedelta(minutes=30))
    assert not judge_stuck(facts, [wait], NOW).stuck


def test_a_sender_at_its_cap_waits_and_the_other_sends_meanwhile() -> None:
    again = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)  # midnight in São Paulo
    capped = [CapWait("s1", "daily_cap", 100, NOW - timedelta(hours=1), again)]
    facts = running(capped=capped, last_send_at=NOW - timedelta(minutes=30))
    waits = run_waits(facts, NOW)
    assert [(w.kind, w.sender, w.until) for w in waits] == [("cap", "s1", again)]
    # s2 could send: half an hour without a send is not explained by s1's cap
    assert judge_stuck(facts, waits, NOW).stuck


def test_every_sender_at_its_cap_explains_no_send() -> None:
    again = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)
    capped = [CapWait(s, "daily_cap", 100, None, again) for s in ("s1", "s2")]
    facts = running(capped=capped, last_send_at=NOW - timedelta(hours=2))
    waits = run_waits(facts, NOW)
    assert kinds(facts) == ["cap", "cap"]
    stuck = judge_stuck(facts, waits, NOW)
    assert not stuck.stuck and stuck.reason.startswith("it waits:")


def test_a_held_sender_says_what_to_do_and_all_held_explains_no_send() -> None:
    todo = "no sends through s1 until a person resumes it"
    one = running(senders=[SenderGlance(sender="s1", state="paused", held=True,
                                        what_to_do=todo),
                           SenderGlance(sender="s2", state="healthy")])
    [wait] = run_waits(one, NOW)
    assert (wait.kind, wait.sender, wait.advice) == ("sender_held", "s1", todo)
    both = running(senders=[SenderGlance(sender=s, state="disconnected", held=True)
                            for s in ("s1", "s2")], last_send_at=NOW - timedelta(hours=1))
    waits = run_waits(both, NOW)
    assert kinds(both) == ["sender_held"] * 3
    assert waits[0].sender is None and "every sender of the run is held" in waits[0].text
    assert not judge_stuck(both, waits, NOW).stuck


def test_a_throttled_sender_sends_slower() -> None:
    facts = running(senders=[SenderGlance(sender="s1", state="throttled", throttle=0.25),
                             SenderGlance(sender="s2", state="healthy")])
    [wait] = run_waits(facts, NOW)
    assert wait.kind == "sender_slow" and "25%" in wait.text


def test_sends_in_doubt_say_until_when_they_are_verified() -> None:
    until = NOW + timedelta(seconds=40)
    facts = running(dispatching=3, verifying_until=until)
    [wait] = run_waits(facts, NOW)
    assert (wait.kind, wait.until) == ("in_doubt", until)
    assert wait.text.startswith("3 sends in doubt are being verified")
    settles = NOW + timedelta(minutes=6)
    [unknown] = run_waits(running(unknown_waiting=2, unknown_settles_at=settles), NOW)
    assert (unknown.kind, unknown.until) == ("in_doubt", settles)


def test_only_sends_in_doubt_left_explain_no_send() -> None:
    facts = running(planned=3, dispatching=3, verifying_until=NOW + timedelta(seconds=40),
                    last_send_at=NOW - timedelta(hours=1))
    assert not judge_stuck(facts, run_waits(facts, NOW), NOW).stuck


def test_nobody_serving_the_run_says_why_and_what_to_do() -> None:
    facts = running(unserved=("run 7 is sent by no live worker", "start `campaign serve`"),
                    last_send_at=NOW - timedelta(hours=1))
    waits = run_waits(facts, NOW)
    assert [(w.kind, w.advice) for w in waits] == [("unserved", "start `campaign serve`")]
    assert not judge_stuck(facts, waits, NOW).stuck


def test_a_stored_run_not_started_says_so() -> None:
    facts = running(status="planned", started_at=None, last_send_at=None)
    assert kinds(facts) == ["not_started"]


@pytest.mark.parametrize("control", ["pause", "cancel"])
def test_a_pause_or_cancel_asked_is_said_until_it_is_obeyed(control: str) -> None:
    assert kinds(running(control=control)) == [control]


def test_no_send_for_longer_than_the_pace_explains_is_stuck() -> None:
    # 2 sends per second: 10 intervals are 5 s, so the floor of 2 minutes applies
    assert allowed_idle(2.0) == STUCK_AFTER_AT_LEAST
    just = running(last_send_at=NOW - STUCK_AFTER_AT_LEAST)
    assert not judge_stuck(just, [], NOW).stuck
    late = running(last_send_at=NOW - STUCK_AFTER_AT_LEAST - timedelta(seconds=1))
    stuck = judge_stuck(late, [], NOW)
    assert stuck.stuck and stuck.idle_s == 121.0 and stuck.allowed_s == 120.0
    assert stuck.reason.startswith("no send for 2 min, longer than its pace explains")


def test_a_slow_pace_allows_a_longer_silence() -> None:
    # one send a minute: ten minutes without one is its pace, eleven is not
    slow = running(planned_rate=1 / 60)
    assert allowed_idle(1 / 60) == timedelta(minutes=10)
    assert not judge_stuck(replace(slow, last_send_at=NOW - timedelta(minutes=10)),
                           [], NOW).stuck
    assert judge_stuck(replace(slow, last_send_at=NOW - timedelta(minutes=11)), [], NOW).stuck


def test_a_run_that_never_sent_counts_from_its_start() -> None:
    facts = running(last_send_at=None, started_at=NOW - timedelta(minutes=5))
    stuck = judge_stuck(facts, [], NOW)
    assert stuck.stuck and stuck.reason.startswith("no send since it started for 5 min")
