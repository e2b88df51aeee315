"""The units of a campaign's options, read from text: pure functions of fixed values."""

from __future__ import annotations

from datetime import UTC
from zoneinfo import ZoneInfo

import pytest
from pydantic import BaseModel, ValidationError

from scheduler.core.errors import SchedulerError
from scheduler.core.units import (
    ClockTime,
    ClockWindow,
    Days,
    Jitter,
    Rate,
    UnitError,
    load_zone,
    parse_clock,
    parse_days,
    parse_duration,
    parse_jitter,
    parse_rate,
    parse_window,
)


@pytest.mark.parametrize(
    ("text", "per_second"),
    [
        ("30/min", 0.5),
        ("2/s", 2.0),
        ("1000/h", 1000 / 3600),
        ("500/day", 500 / 86400),
        ("10/5min", 10 / 300),
        ("30 per minute", 0.5),
        ("1.5/sec", 1.5),
        ("60/hour", 1 / 60),
    ],
)
def test_parse_rate(text: str, per_second: float) -> None:
    assert parse_rate(text) == pytest.approx(per_second)


@pytest.mark.parametrize("text", ["fast", "30", "0/min", "30/fortnight", "/min", "-1/s"])
def test_parse_rate_rejects(text: str) -> None:
    with pytest.raises(UnitError, match="rate"):
        parse_rate(text)


@pytest.mark.parametrize(
    ("text", "bounds"),
    [
        ("2s-8s", (2.0, 8.0)),
        ("500ms-1s", (0.5, 1.0)),
        ("3s", (3.0, 3.0)),
        ("0", (0.0, 0.0)),
        ("1m-1m30s", (60.0, 90.0)),
    ],
)
def test_parse_jitter(text: str, bounds: tuple[float, float]) -> None:
    assert parse_jitter(text) == bounds


@pytest.mark.parametrize("text", ["8s-2s", "2-8", "2s-8s-9s", "soon"])
def test_parse_jitter_rejects(text: str) -> None:
    with pytest.raises(UnitError, match="jitter"):
        parse_jitter(text)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1h30m", 5400), ("2d", 172800), ("250ms", 0.25), ("10m", 600), ("2s", 2), ("0", 0),
     ("1 hour 30 minutes", 5400)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["1x", "h", "1h x", "10 minutes later", "-1s"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(UnitError, match="duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "days"),
    [
        ("mon-sat", {0, 1, 2, 3, 4, 5}),
        ("mon,wed,fri", {0, 2, 4}),
        ("fri-mon", {4, 5, 6, 0}),
        ("*", set(range(7))),
        ("seg-sex", {0, 1, 2, 3, 4}),
        ("Sáb, dom", {5, 6}),
        ("mon-wed,sat", {0, 1, 2, 5}),
        ("sun", {6}),
    ],
)
def test_parse_days(text: str, days: set[int]) -> None:
    assert parse_days(text) == days


@pytest.mark.parametrize("text", ["", "mon-", "funday", "mon-tue-wed", "mon,,tue"])
def test_parse_days_rejects(text: str) -> None:
    with pytest.raises(UnitError, match="days"):
        parse_days(text)


def test_parse_clock_and_window() -> None:
    assert parse_clock("09:30") == 570 and parse_clock("24:00") == 1440
    assert parse_window("09:00-20:00") == (540, 1200)
    assert parse_window("22:00-06:00") == (1320, 360)  # overnight: opens after it closes
    assert parse_window("00:00-00:00") == (0, 0)  # the whole day
    for bad in ("9", "25:00", "24:01", "12:60"):
        with pytest.raises(UnitError, match="time"):
            parse_clock(bad)
    for bad in ("09:00", "09:00-10:00-11:00", "24:00-06:00"):
        with pytest.raises(UnitError, match="window"):
            parse_window(bad)


def test_time_zones() -> None:
    assert load_zone("America/Sao_Paulo") == ZoneInfo("America/Sao_Paulo")
    assert load_zone(UTC) is UTC
    with pytest.raises(UnitError, match="'Mars/Base' is not an IANA zone name"):
        load_zone("Mars/Base")


def test_one_error_type_a_user_sees_as_one_line() -> None:
    """UnitError is the program's user error (one line, exit 1) and a ValueError (pydantic
    files it under the field that holds the text)."""
    with pytest.raises(UnitError) as caught:
        parse_rate("30")
    assert isinstance(caught.value, SchedulerError) and isinstance(caught.value, ValueError)
    assert str(caught.value) == "rate '30': expected COUNT/UNIT, e.g. 30/min, 2/s, 1000/h, 500/day"


def test_values_keep_their_text_and_numbers() -> None:
    assert Rate.parse("30/min") == Rate("30/min", 0.5) and str(Rate.parse("30/min")) == "30/min"
    assert Jitter.parse("2s-8s").bounds_s == (2.0, 8.0)
    assert ClockTime.parse("20:00").minutes == 1200
    window = ClockWindow.parse("09:00-20:00")
    assert (window.opens_min, window.closes_min, str(window)) == (540, 1200, "09:00-20:00")
    assert Days.parse("mon-sat").weekdays == frozenset(range(6))


class _Pace(BaseModel):
    rate: Rate
    jitter: Jitter = Jitter.parse("0")
    days: Days = Days.parse("*")


def test_values_in_a_model_read_and_write_their_text() -> None:
    pace = _Pace.model_validate({"rate": "30/min", "jitter": "2s-8s"})
    assert pace.rate.per_s == 0.5 and pace.jitter.bounds_s == (2.0, 8.0)
    assert pace.model_dump(mode="json") == {"rate": "30/min", "jitter": "2s-8s", "days": "*"}
    assert pace.model_dump() == {"rate": "30/min", "jitter": "2s-8s", "days": "*"}
    assert _Pace.model_validate_json(pace.model_dump_json()) == pace
    assert _Pace(rate=Rate.parse("2/s")).rate.per_s == 2.0  # a value is taken as it is


def test_values_in_a_model_report_the_field() -> None:
    with pytest.raises(ValidationError) as caught:
        _Pace.model_validate({"rate": "fast", "days": 3})
    errors = {e["loc"]: (e["type"], e["msg"]) for e in caught.value.errors(include_url=False)}
    assert errors[("rate",)] == (
        "value_error",
        "Value error, rate 'fast': expected COUNT/UNIT, e.g. 30/min, 2/s, 1000/h, 500/day")
    assert errors[("days",)] == ("string_type", "Input should be a valid string")

