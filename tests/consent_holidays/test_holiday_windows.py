"""Holidays in the send window, pure: fixed datetimes, no clock, no ledger."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from scheduler.campaign.area_codes import state_of
from scheduler.campaign.holidays import (
    HolidayCalendar,
    HolidayCodeError,
    check_code,
    recipient_calendar,
)
from scheduler.dispatch.waits import holiday_words
from scheduler.dispatch.windows import SendWindow

SP = "America/Sao_Paulo"


def _window(code: str | None, window: str = "09:00-20:00", days: str = "*") -> SendWindow:
    start, end = window.split("-")
    return SendWindow(start, end, days, SP,
                      None if code is None else HolidayCalendar(code))


def test_christmas_is_named_in_portuguese_and_a_state_holiday_only_in_its_state() -> None:
    assert HolidayCalendar("BR").name_on(date(2026, 12, 25)) == "Natal"
    assert HolidayCalendar("BR").name_on(date(2026, 7, 9)) is None
    assert HolidayCalendar("BR-SP").name_on(date(2026, 7, 9)) == "Revolução Constitucionalista"
    assert HolidayCalendar("BR-RJ").name_on(date(2026, 7, 9)) is None
    assert HolidayCalendar("BR").name_on(date(2026, 12, 24)) is None


def test_the_whole_holiday_is_outside_the_window() -> None:
    window = _window("BR")
    # 24 Dec 19:59 local is open; 25 Dec noon is not; it reopens on 26 Dec at 09:00
    assert window.is_open(datetime(2026, 12, 24, 22, 59, tzinfo=UTC))
    christmas_noon = datetime(2026, 12, 25, 15, 0, tzinfo=UTC)
    assert not window.is_open(christmas_noon)
    assert window.next_open(christmas_noon) == datetime(2026, 12, 26, 12, 0, tzinfo=UTC)
    # from the evening before: straight over the holiday
    evening = datetime(2026, 12, 24, 23, 30, tzinfo=UTC)  # 20:30 local, closed
    assert window.next_open(evening) == datetime(2026, 12, 26, 12, 0, tzinfo=UTC)
    assert window.holidays_between(evening, window.next_open(evening)) == ["Natal"]
    # without a calendar the same instant is open
    assert _window(None).is_open(christmas_noon)


def test_a_whole_day_window_and_an_overnight_one_stop_at_the_holiday_midnight() -> None:
    whole = _window("BR", "00:00-00:00")
    assert not whole.is_open(datetime(2026, 12, 25, 3, 0, tzinfo=UTC))  # 00:00 local
    assert whole.is_open(datetime(2026, 12, 25, 2, 59, tzinfo=UTC))  # 23:59 on the 24th
    night = _window("BR", "22:00-06:00")
    opened = datetime(2026, 12, 25, 1, 30, tzinfo=UTC)  # 22:30 on the 24th
    assert night.is_open(opened)
    assert night.closes_at(opened) == datetime(2026, 12, 25, 3, 0, tzinfo=UTC)
    assert not night.is_open(datetime(2026, 12, 25, 4, 0, tzinfo=UTC))  # 01:00 on the 25th
    # Christmas night's window does not open either; the 26th's does
    assert night.next_open(opened.replace(hour=4)) == datetime(2026, 12, 27, 1, 0, tzinfo=UTC)


def test_holidays_and_weekdays_together_skip_to_the_next_working_day() -> None:
    # Friday 2026-12-25 is Christmas; mon-fri: the next window is Monday the 28th
    window = _window("BR", days="mon-fri")
    friday = datetime(2026, 12, 25, 12, 0, tzinfo=UTC)
    assert window.next_open(friday) == datetime(2026, 12, 28, 12, 0, tzinfo=UTC)
    assert window.closed_since(friday) == datetime(2026, 12, 24, 23, 0, tzinfo=UTC)


def test_a_recipients_state_comes_from_the_area_code() -> None:
    assert [state_of(f"55{ddd}987654321") for ddd in range(11, 20)] == ["SP"] * 9
    assert state_of("5521987654321") == "RJ"
    assert state_of("5568999990000") == "AC"
    assert state_of("14155550100") is None
    calendar = recipient_calendar("5511987654321")
    assert calendar is not None and calendar.code == "BR-SP"
    assert recipient_calendar("5521987654321") == HolidayCalendar("BR-RJ")


def test_codes_are_checked_with_a_clear_message() -> None:
    assert check_code("br") == "BR" and check_code("br-sp") == "BR-SP"
    assert check_code("Recipient") == "recipient"
    with pytest.raises(HolidayCodeError, match="unknown holiday code 'XX'"):
        check_code("XX")
    with pytest.raises(HolidayCodeError, match="BR has no state 'ZZ'"):
        check_code("BR-ZZ")


def test_the_wait_says_which_holiday() -> None:
    assert holiday_words([]) == ""
    assert holiday_words(["Natal"]) == " (holiday: Natal)"
