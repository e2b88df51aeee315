"""The warm-up ramp as pure functions of fixed dates."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from pydantic import ValidationError

from scheduler.dispatch.warmup import (
    DEFAULT_PROFILE,
    WarmDay,
    WarmupProfile,
    cap_for_day,
    day_today,
    describe,
    is_warming,
)

NOW = datetime(2027, 3, 8, 12, 0, tzinfo=UTC)
MONDAY = date(2027, 3, 8)


def test_the_default_ramp_grows_by_1_8_a_day_and_reaches_the_normal_cap_on_day_8() -> None:
    caps = [cap_for_day(DEFAULT_PROFILE, day, 1000) for day in range(1, 10)]
    assert caps == [20, 36, 65, 117, 210, 378, 680, 1000, 1000]
    assert describe("s1", DEFAULT_PROFILE, 3, caps[2]) == "s1 warming: day 3 of 8, 65 today"


def test_the_ramp_never_exceeds_the_senders_normal_cap_and_none_means_no_cap() -> None:
    assert [cap_for_day(DEFAULT_PROFILE, d, 100) for d in (1, 4, 5, 8)] == [20, 100, 100, 100]
    assert cap_for_day(DEFAULT_PROFILE, 2, None) == 36
    assert cap_for_day(DEFAULT_PROFILE, 8, None) is None
    assert is_warming(DEFAULT_PROFILE, 7) and not is_warming(DEFAULT_PROFILE, 8)
    assert not is_warming(None, 1)


def test_a_named_profile_sets_its_own_ramp_and_refuses_nonsense() -> None:
    gentle = WarmupProfile(first_cap=10, growth=1.5, days=5)
    assert [cap_for_day(gentle, d, 500) for d in range(1, 6)] == [10, 15, 22, 34, 500]
    with pytest.raises(ValidationError, match="growth"):
        WarmupProfile(growth=0.9)


def _today(current: WarmDay, today: date, *, sent_on: date | None, healthy: bool = True,
           last_sent_at: datetime | None = None) -> WarmDay:
    return day_today(DEFAULT_PROFILE, current, today, last_sent_on=sent_on, healthy=healthy,
                     last_sent_at=last_sent_at or NOW - timedelta(hours=20), now=NOW)


def test_a_day_counts_only_when_the_sender_sent_that_day_while_healthy() -> None:
    tuesday = MONDAY + timedelta(days=1)
    assert _today(WarmDay(3, MONDAY), tuesday, sent_on=MONDAY) == WarmDay(4, tuesday)
    assert _today(WarmDay(3, MONDAY), tuesday, sent_on=None) == WarmDay(3, tuesday)
    assert _today(WarmDay(3, MONDAY), tuesday, sent_on=MONDAY, healthy=False) == \
        WarmDay(3, tuesday)
    assert _today(WarmDay(3, MONDAY), MONDAY, sent_on=MONDAY) == WarmDay(3, MONDAY)
    assert _today(WarmDay(1, None), MONDAY, sent_on=None) == WarmDay(1, MONDAY)


def test_72_hours_idle_start_the_ramp_again() -> None:
    later = MONDAY + timedelta(days=4)
    idle = NOW - timedelta(hours=72)
    assert _today(WarmDay(6, MONDAY), later, sent_on=MONDAY, last_sent_at=idle) == \
        WarmDay(1, later)
    almost = NOW - timedelta(hours=71)
    assert _today(WarmDay(6, MONDAY), later, sent_on=MONDAY, last_sent_at=almost) == \
        WarmDay(7, later)
