"""Waits of the dispatcher as pure functions of fixed datetimes: never past the latest send
time; a line on the timeline when recipients' own windows hold every delivery back."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from scheduler.dispatch.waits import capped, deferred_to, recipients_wait_note

SP = ZoneInfo("America/Sao_Paulo")
NOW = datetime(2027, 3, 8, 20, 14, tzinfo=SP)
MORNING = datetime(2027, 3, 9, 9, 0, tzinfo=SP)


def test_a_wait_ends_at_the_latest_send_time_when_that_comes_first() -> None:
    latest = datetime(2027, 3, 8, 20, 0, tzinfo=SP)
    next_slot = datetime(2027, 3, 8, 20, 4, 17, tzinfo=SP)
    assert capped(next_slot, latest) == latest
    assert capped(datetime(2027, 3, 8, 19, 55, tzinfo=SP), latest) == datetime(
        2027, 3, 8, 19, 55, tzinfo=SP)
    assert capped(next_slot, None) == next_slot
    assert capped(None, latest) is None  # "no due time" stays a short poll


def test_deferrals_are_matched_to_the_next_due_time_within_a_second() -> None:
    opens = Counter({MORNING: 15, MORNING + timedelta(hours=1): 4})
    assert deferred_to(opens, MORNING.astimezone(UTC)) == 15  # same instant, another zone
    assert deferred_to(opens, MORNING + timedelta(milliseconds=400)) == 15
    assert deferred_to(opens, MORNING + timedelta(minutes=30)) == 0
    assert deferred_to(opens, None) == 0


def test_a_night_spent_waiting_for_recipients_windows_is_said_in_the_campaign_zone() -> None:
    note = recipients_wait_note(NOW, MORNING.astimezone(UTC), 15, deferred=15, zone=SP,
                                zone_name="America/Sao_Paulo")
    assert note == ("recipients' own time zones: no recipient's window is open; 15 "
                    "deliveries wait, the first until 2027-03-09 09:00 (America/Sao_Paulo)")


def test_the_latest_send_time_is_named_when_it_comes_before_any_window_opens() -> None:
    latest = datetime(2027, 3, 8, 22, 0, tzinfo=SP)
    note = recipients_wait_note(NOW, MORNING, 15, deferred=15, zone=SP,
                                zone_name="America/Sao_Paulo", latest=latest)
    assert note is not None and "latest send time 2027-03-08 22:00" in note


def test_no_line_for_pacing_gaps_step_delays_or_an_empty_run() -> None:
    soon = NOW + timedelta(minutes=9)
    assert recipients_wait_note(NOW, soon, 15, deferred=15, zone=SP, zone_name="x") is None
    # the first due delivery waits for a step's delay, not for a window
    assert recipients_wait_note(NOW, MORNING, 15, deferred=0, zone=SP, zone_name="x") is None
    assert recipients_wait_note(NOW, None, 0, deferred=3, zone=SP, zone_name="x") is None
