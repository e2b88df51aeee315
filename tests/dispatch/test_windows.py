"""Send windows as pure functions of fixed datetimes: days, overnight, DST, recipient zones
(the window and day texts are read by scheduler.core.units: tests/test_units.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from scheduler.dispatch.windows import (
    SendWindow,
    next_local_midnight,
    zone_for_number,
    zone_for_region,
)

SP = ZoneInfo("America/Sao_Paulo")
NY = ZoneInfo("America/New_York")


def test_daytime_window_mon_sat() -> None:
    w = SendWindow("09:00", "20:00", "mon-sat", "America/Sao_Paulo")
    monday_10 = datetime(2025, 3, 10, 10, 0, tzinfo=SP)
    assert w.is_open(monday_10)
    assert w.next_open(monday_10) == monday_10
    assert w.closes_at(monday_10) == datetime(2025, 3, 10, 20, 0, tzinfo=SP)
    assert not w.is_open(datetime(2025, 3, 10, 20, 0, tzinfo=SP))  # the end is exclusive
    assert w.is_open(datetime(2025, 3, 10, 9, 0, tzinfo=SP))  # the start is inclusive
    saturday_21 = datetime(2025, 3, 15, 21, 0, tzinfo=SP)
    assert not w.is_open(saturday_21) and w.closes_at(saturday_21) is None
    assert w.next_open(saturday_21) == datetime(2025, 3, 17, 9, 0, tzinfo=SP)  # Monday
    early = datetime(2025, 3, 11, 7, 0, tzinfo=SP)
    assert w.next_open(early) == datetime(2025, 3, 11, 9, 0, tzinfo=SP)


def test_window_is_read_in_its_zone_whatever_the_input_zone() -> None:
    w = SendWindow.parse("09:00-20:00", "mon-fri", "America/Sao_Paulo")
    utc = datetime(2025, 3, 10, 11, 59, tzinfo=UTC)  # 08:59 in São Paulo
    assert not w.is_open(utc)
    opens = w.next_open(utc)
    assert opens == datetime(2025, 3, 10, 12, 0, tzinfo=UTC) and opens.tzinfo is UTC


def test_overnight_window_belongs_to_the_day_it_opens() -> None:
    w = SendWindow.parse("22:00-06:00", "fri", "UTC")
    assert w.is_open(datetime(2025, 3, 14, 23, 0, tzinfo=UTC))  # Friday night
    assert w.is_open(datetime(2025, 3, 15, 5, 59, tzinfo=UTC))  # Saturday early morning
    assert not w.is_open(datetime(2025, 3, 15, 6, 0, tzinfo=UTC))
    assert not w.is_open(datetime(2025, 3, 14, 3, 0, tzinfo=UTC))  # Thursday's night: closed
    assert w.closes_at(datetime(2025, 3, 14, 23, 0, tzinfo=UTC)) == datetime(
        2025, 3, 15, 6, 0, tzinfo=UTC
    )
    assert w.next_open(datetime(2025, 3, 15, 7, 0, tzinfo=UTC)) == datetime(
        2025, 3, 21, 22, 0, tzinfo=UTC
    )


def test_whole_day_window() -> None:
    w = SendWindow.parse("00:00-00:00", "mon-fri", "America/Sao_Paulo")
    assert w.is_open(datetime(2025, 3, 10, 0, 0, tzinfo=SP))
    assert w.is_open(datetime(2025, 3, 14, 23, 59, tzinfo=SP))
    assert w.next_open(datetime(2025, 3, 15, 12, 0, tzinfo=SP)) == datetime(
        2025, 3, 17, 0, 0, tzinfo=SP
    )
    assert SendWindow().is_open(datetime(2025, 1, 1, tzinfo=UTC))


def _real_seconds(start: datetime, end: datetime | None) -> float:
    """Elapsed seconds (Python subtracts same-zone datetimes by wall clock: go through UTC)."""
    assert end is not None
    return (end.astimezone(UTC) - start.astimezone(UTC)).total_seconds()


def test_dst_spring_forward_keeps_wall_clock_hours() -> None:
    # New York moved from EST (-5) to EDT (-4) at 02:00 on Sunday 2025-03-09.
    w = SendWindow("09:00", "20:00", "*", NY)
    saturday_close = w.closes_at(datetime(2025, 3, 8, 12, 0, tzinfo=NY))
    sunday_open = w.next_open(saturday_close)
    assert sunday_open.astimezone(UTC) == datetime(2025, 3, 9, 13, 0, tzinfo=UTC)
    assert saturday_close.astimezone(UTC) == datetime(2025, 3, 9, 1, 0, tzinfo=UTC)
    sunday_close = w.closes_at(sunday_open)
    assert _real_seconds(sunday_open, sunday_close) == 11 * 3600
    # a window across the change is an hour shorter in real time
    night = SendWindow("00:00", "06:00", "sun", NY)
    opens = night.next_open(datetime(2025, 3, 8, 12, 0, tzinfo=NY))
    assert _real_seconds(opens, night.closes_at(opens)) == 5 * 3600


def test_dst_gap_and_fold() -> None:
    # 02:30 does not exist on 2025-03-09 in New York: it is read as 03:30 EDT (fold=0).
    w = SendWindow("02:30", "04:00", "sun", NY)
    opens = w.next_open(datetime(2025, 3, 8, 12, 0, tzinfo=NY))
    assert opens.astimezone(UTC) == datetime(2025, 3, 9, 7, 30, tzinfo=UTC)
    # 01:30 happens twice on 2025-11-02: the window opens at the first one.
    fall = SendWindow("01:30", "03:00", "sun", NY)
    opens = fall.next_open(datetime(2025, 11, 1, 12, 0, tzinfo=NY))
    assert opens.astimezone(UTC) == datetime(2025, 11, 2, 5, 30, tzinfo=UTC)
    assert _real_seconds(opens, fall.closes_at(opens)) == 2.5 * 3600


def test_next_local_midnight_is_dst_correct() -> None:
    at = datetime(2025, 3, 8, 15, 0, tzinfo=NY)
    assert next_local_midnight(at, NY) == datetime(2025, 3, 9, 5, 0, tzinfo=UTC)
    assert next_local_midnight(datetime(2025, 3, 9, 15, 0, tzinfo=NY), NY) == datetime(
        2025, 3, 10, 4, 0, tzinfo=UTC
    )


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="naive"):
        SendWindow().is_open(datetime(2025, 1, 1))


def test_bad_window_arguments() -> None:
    with pytest.raises(ValueError, match="time zone"):
        SendWindow(tz="Mars/Base")
    with pytest.raises(ValueError):
        SendWindow("24:00", "01:00")


def test_recipient_zones() -> None:
    assert zone_for_number("5511987654321") == "America/Sao_Paulo"
    assert zone_for_number("5568999998888") == "America/Rio_Branco"
    assert zone_for_number("5592999998888") == "America/Manaus"
    assert zone_for_number("not-a-number", "UTC") == "UTC"
    assert zone_for_region("BR") == "America/Sao_Paulo"
    assert zone_for_region("PT") == "Europe/Lisbon"
    assert zone_for_region("", "America/Sao_Paulo") == "America/Sao_Paulo"
    w = SendWindow.parse("09:00-20:00", "*", "America/Sao_Paulo")
    local = w.in_zone(zone_for_number("5568999998888"))
    at = datetime(2025, 3, 10, 10, 30, tzinfo=SP)  # 08:30 in Rio Branco
    assert w.is_open(at) and not local.is_open(at)
    assert local.next_open(at) == datetime(2025, 3, 10, 11, 0, tzinfo=SP)
