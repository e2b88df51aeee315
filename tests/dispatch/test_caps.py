"""A sender at its daily cap or plan limit, as pure functions of fixed datetimes: which
sender, its cap, when it was reached, when it sends again (the window's next opening), said
once per cap and dated when it was reached; a window's closing dated at its end."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from scheduler.dispatch.caps import CapWatch, cap_sentence, describe, waits_from_counts
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.results import CapWait
from scheduler.dispatch.senders import SenderPool
from scheduler.dispatch.windows import SendWindow

ZONE = "America/Sao_Paulo"
SP = ZoneInfo(ZONE)
#: Tuesday 2026-12-01, 09:00 in São Paulo.
TUESDAY = datetime(2026, 12, 1, 9, 0, tzinfo=SP)
WINDOW = SendWindow.parse("08:00-20:00", "*", ZONE)
REACHED = datetime(2026, 12, 1, 9, 16, 39, tzinfo=SP)
WEDNESDAY_8 = datetime(2026, 12, 2, 8, 0, tzinfo=SP)


def _options(**values: object) -> DispatchOptions:
    base: dict[str, object] = {"senders": ("s1",), "rate": 1.0, "daily_cap": 1000,
                               "timezone": ZONE, "window": WINDOW}
    base.update(values)
    return DispatchOptions(**base)  # type: ignore[arg-type]


def _pool(options: DispatchOptions, now: datetime, **kw: object) -> SenderPool:
    return SenderPool(list(options.senders), rate=options.rate, rng=random.Random(1),
                      daily_cap=options.daily_cap, tz=SP, now=now, **kw)  # type: ignore[arg-type]


def test_the_sentence_says_which_sender_its_cap_when_reached_and_when_it_sends_again() -> None:
    wait = CapWait("s1", "daily_cap", 1000, REACHED, WEDNESDAY_8)
    assert cap_sentence(wait, ZONE) == ("sender s1 reached its daily cap of 1,000 at 09:16 "
                                        "-03:00; sends again 2026-12-02 08:00 -03:00")
    noon = datetime(2026, 12, 1, 12, 0, tzinfo=SP)
    assert cap_sentence(wait, ZONE, now=noon).endswith(
        "sends again 2026-12-02 08:00 -03:00 (in 20 h 00 min)")
    latest = datetime(2026, 12, 1, 20, 0, tzinfo=SP)
    assert cap_sentence(wait, ZONE, latest=latest) == (
        "sender s1 reached its daily cap of 1,000 at 09:16 -03:00; it sends no more before "
        "the latest send time 2026-12-01 20:00 -03:00")
    service = CapWait("s2", "plan_limit", None, None, WEDNESDAY_8)
    assert cap_sentence(service, ZONE) == (
        "sender s2 has used its plan's message limit (the service's limits); sends again "
        "2026-12-02 08:00 -03:00")


def test_describe_says_when_nothing_can_be_sent_and_sums_up_many_senders() -> None:
    noon = datetime(2026, 12, 1, 12, 0, tzinfo=SP)
    one = [CapWait("s1", "daily_cap", 1000, REACHED, WEDNESDAY_8)]
    assert describe(one, ZONE, noon, senders=2) == [
        "sender s1 reached its daily cap of 1,000 at 09:16 -03:00; sends again "
        "2026-12-02 08:00 -03:00 (in 20 h 00 min)",
        "the other senders send their deliveries meanwhile"]
    assert describe(one, ZONE, noon, senders=1)[0] == (
        "nothing can be sent before 2026-12-02 08:00 -03:00: every sender is at its daily "
        "cap or plan limit")
    assert describe(one, ZONE, WEDNESDAY_8, senders=1) == []  # the wait is over
    many = [CapWait(f"s{i}", "daily_cap", 1000, REACHED, WEDNESDAY_8) for i in range(5)]
    lines = describe(many, ZONE, noon, senders=5)
    assert len(lines) == 5 and lines[-1] == (
        "and 2 more senders at their daily cap or plan limit, sending again from "
        "2026-12-02 08:00 -03:00")


def test_waits_from_the_ledgers_counts_name_the_cap_reached_first() -> None:
    noon = datetime(2026, 12, 1, 12, 0, tzinfo=SP)
    asked: list[tuple[str, datetime, int]] = []

    def nth_send(sender: str, since: datetime, n: int) -> datetime:
        asked.append((sender, since, n))
        return REACHED

    options = _options(senders=("s1", "s2", "s3"), plan_limit=800)
    waits = waits_from_counts(options, {"s1": 1000, "s2": 800, "s3": 799}, noon, nth_send)
    assert waits == [CapWait("s1", "plan_limit", 800, REACHED, WEDNESDAY_8),
                     CapWait("s2", "plan_limit", 800, REACHED, WEDNESDAY_8)]
    assert asked[0] == ("s1", datetime(2026, 12, 1, 0, 0, tzinfo=SP), 800)  # since midnight
    # no window: it sends again at the local midnight
    waits = waits_from_counts(_options(window=None), {"s1": 1000}, noon)
    assert waits == [CapWait("s1", "daily_cap", 1000, None,
                             datetime(2026, 12, 2, 0, 0, tzinfo=SP))]


def test_the_watch_says_a_cap_once_dated_at_the_send_that_reached_it() -> None:
    options = _options(daily_cap=3)
    pool = _pool(options, TUESDAY)
    watch = CapWatch(options)
    state = pool.senders["s1"]
    said = []
    for i in range(3):  # one send a second
        now = TUESDAY + timedelta(seconds=i)
        picked, ready = pool.pick(now)
        assert picked is state and ready is not None
        pool.on_claim(state, ready, now)
        said += watch.look(pool, [state], stuck=False, now=now)
    assert said == []  # the cap reached by the third send is said at the next turn
    later = TUESDAY + timedelta(seconds=3)
    assert pool.pick(later)[0] is None  # it waits for the next day
    said = watch.look(pool, [], stuck=True, now=later)
    assert [(e.at, e.kind, e.sender, e.until) for e in said] == [
        (TUESDAY + timedelta(seconds=2), "sender_capped", "s1", WEDNESDAY_8)]
    assert said[0].what == ("sender s1 reached its daily cap of 3 at 09:00 -03:00; sends "
                            "again 2026-12-02 08:00 -03:00")
    assert watch.look(pool, [], stuck=True, now=later + timedelta(hours=1)) == []  # once


def test_a_cap_already_reached_at_the_start_is_dated_from_the_ledger() -> None:
    options = _options(daily_cap=1000)
    pool = _pool(options, TUESDAY, sent_today={"s1": 1000})
    watch = CapWatch(options, nth_send=lambda sender, since, n: REACHED)
    said = watch.look(pool, [], stuck=True, now=TUESDAY + timedelta(hours=1))
    assert [(e.at, e.cap) for e in said] == [
        (REACHED, CapWait("s1", "daily_cap", 1000, REACHED, WEDNESDAY_8))]


def test_the_services_plan_quota_and_the_campaigns_plan_limit_are_said_as_such() -> None:
    options = _options(daily_cap=None, senders=("s1", "s2"), plan_limit=500)
    pool = _pool(options, TUESDAY)
    resets = datetime(2026, 12, 1, 22, 0, tzinfo=UTC)  # the service's own reset time
    pool.set_quota("s1", 0, resets)
    pool.set_quota("s2", 0, datetime(2026, 12, 2, 0, 0, tzinfo=SP))
    watch = CapWatch(options, service_quotas={"s1"})
    said = watch.look(pool, [], stuck=True, now=TUESDAY)
    assert [e.what for e in said] == [
        "sender s1 has used its plan's message limit (the service's limits); sends again "
        "2026-12-01 19:00 -03:00",  # 22:00 UTC, inside the window
        "sender s2 has used its plan limit of 500 a day; sends again 2026-12-02 08:00 -03:00"]


def test_a_windows_closing_is_dated_at_its_end() -> None:
    late = datetime(2026, 12, 1, 20, 16, 39, tzinfo=SP)
    assert WINDOW.closed_since(late) == datetime(2026, 12, 1, 20, 0, tzinfo=SP)
    assert WINDOW.closed_since(datetime(2026, 12, 2, 7, 0, tzinfo=SP)) == datetime(
        2026, 12, 1, 20, 0, tzinfo=SP)
    assert WINDOW.closed_since(TUESDAY) is None  # open
    weekdays = SendWindow.parse("08:00-20:00", "mon-fri", ZONE)
    sunday = datetime(2026, 12, 6, 10, 0, tzinfo=SP)
    assert weekdays.closed_since(sunday) == datetime(2026, 12, 4, 20, 0, tzinfo=SP)
