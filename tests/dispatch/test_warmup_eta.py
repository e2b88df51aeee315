"""Warm-up in the plan's estimate: caps day by day, as pure functions of fixed datetimes."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from scheduler.dispatch.pacing import estimate_finish, sender_finish
from scheduler.dispatch.warmup import DEFAULT_PROFILE, day_at
from scheduler.dispatch.warmup_eta import ramp_caps, ramp_start
from scheduler.dispatch.windows import SendWindow
from scheduler.settings.senders import WarmupProfile

SP = ZoneInfo("America/Sao_Paulo")
MONDAY = datetime(2027, 3, 8, 10, 0, tzinfo=SP)


def test_a_new_sender_sends_20_then_36_then_65_a_day() -> None:
    caps = ramp_caps(DEFAULT_PROFILE, 1, None)
    assert [caps(n) for n in range(8)] == [20, 36, 65, 117, 210, 378, 680, None]
    # one send a second: 20 on Monday, 36 from Tuesday's midnight, the 121st on Wednesday
    done = sender_finish(20 + 36 + 65, start=MONDAY, interval_s=1, tz=SP, day_caps=caps)
    assert done == datetime(2027, 3, 10, 0, 1, 4, tzinfo=SP)
    assert sender_finish(20, start=MONDAY, interval_s=1, tz=SP, day_caps=caps) == \
        MONDAY + timedelta(seconds=19)
    # the same sends without warm-up: two minutes on Monday
    assert sender_finish(121, start=MONDAY, interval_s=1, tz=SP) == \
        MONDAY + timedelta(seconds=120)


def test_a_sender_on_day_3_starts_at_65_and_the_normal_cap_bounds_the_ramp() -> None:
    done = sender_finish(65 + 100, start=MONDAY, interval_s=1, tz=SP,
                         day_caps=ramp_caps(DEFAULT_PROFILE, 3, 100))
    # day 3: 65; day 4 would be 117, above the campaign's daily_cap of 100
    assert done == datetime(2027, 3, 9, 0, 1, 39, tzinfo=SP)
    short = WarmupProfile(first_cap=20, growth=1.8, days=3)
    caps = ramp_caps(short, 1, 50)
    assert [caps(n) for n in range(4)] == [20, 36, 50, 50]


def test_a_day_the_window_keeps_closed_does_not_move_the_ramp() -> None:
    window = SendWindow("09:00", "18:00", "mon-fri", SP)
    friday = datetime(2027, 3, 12, 9, 0, tzinfo=SP)
    done = sender_finish(20 + 36, start=friday, interval_s=60, window=window, tz=SP,
                         day_caps=ramp_caps(DEFAULT_PROFILE, 1, None))
    # 20 on Friday; Saturday and Sunday closed; Monday is day 2 (36): 09:00 to 09:35
    assert done == datetime(2027, 3, 15, 9, 35, tzinfo=SP)


def test_the_estimate_caps_only_the_warming_senders() -> None:
    estimate = estimate_finish([100, 100], start=MONDAY, rate=1.0, tz=SP,
                               day_caps=[ramp_caps(DEFAULT_PROFILE, 1, None), None])
    warming, plain = estimate.per_sender
    assert plain == MONDAY + timedelta(seconds=99)
    assert warming == datetime(2027, 3, 10, 0, 0, 43, tzinfo=SP)  # 20 + 36 + 44
    assert estimate.finish == warming


def test_the_day_at_the_start_follows_the_engines_rule() -> None:
    monday = MONDAY.date()

    def day(*, warm_day: int = 3, on: date | None = monday, last: datetime | None = MONDAY,
            healthy: bool = True, at: datetime = MONDAY) -> int:
        return day_at(DEFAULT_PROFILE, warm_day=warm_day, warm_day_date=on,
                      last_sent_at=last, healthy=healthy, at=at, tz=SP)

    tuesday = MONDAY + timedelta(days=1)
    assert day() == 3  # the same date
    assert day(at=tuesday) == 4  # it sent on its day while healthy
    assert day(at=tuesday, healthy=False) == 3  # throttled: the ramp holds
    assert day(at=tuesday, last=MONDAY - timedelta(days=1)) == 3  # no send on its day
    assert day(at=MONDAY + timedelta(hours=72)) == 1  # idle 72 h: day 1 again
    assert day(warm_day=1, on=None, last=None) == 1  # new


def test_the_line_names_the_day_and_todays_cap() -> None:
    entry = ramp_start("s1", DEFAULT_PROFILE, 3, 1000)
    assert entry is not None and entry.line() == "s1 warming: day 3 of 8, 65 today"
    assert entry.as_dict()["cap_today"] == 65
    capped = ramp_start("s1", DEFAULT_PROFILE, 5, 100)
    assert capped is not None and capped.cap == 100
    assert ramp_start("s1", DEFAULT_PROFILE, 8, 1000) is None  # the ramp is done
    assert ramp_start("s1", None, 1, 1000) is None  # warm-up off
