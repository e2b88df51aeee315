"""The coverage search that judges thousands of ``unknown`` rows at once gives the verdicts
and gaps of the plain walk over every receiver interval, row by row."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.dispatch.unknowns import Gap, judge_unknowns
from scheduler.ledger.rows import UptimeInterval

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
HORIZON = timedelta(seconds=60)


def walked_gap(start: datetime, end: datetime, intervals: Sequence[UptimeInterval]
               ) -> Gap | None:
    """The first uncovered stretch of ``[start, end]``, walking every interval in order."""
    reach = start
    for interval in sorted(intervals, key=lambda i: i.started_at):
        if interval.last_seen_at <= reach:
            continue
        if interval.started_at > reach:
            return Gap(reach, min(interval.started_at, end))
        reach = interval.last_seen_at
        if reach >= end:
            return None
    return Gap(reach, end)


def walked_row_gap(sent_at: datetime, end: datetime, intervals: Sequence[UptimeInterval]
                   ) -> Gap | None:
    """Every receiver listening at the dispatch must have covered the horizon."""
    keys = {i.url_key for i in intervals if i.started_at <= sent_at <= i.last_seen_at}
    if not keys:
        return walked_gap(sent_at, end, intervals) or Gap(sent_at, end)
    found = [walked_gap(sent_at, end, [i for i in intervals if i.url_key == key])
             for key in sorted(keys)]
    gaps = [gap for gap in found if gap is not None]
    return min(gaps, key=lambda gap: gap.start) if gaps else None


def at(second: int) -> datetime:
    return T0 + timedelta(seconds=second)


intervals_st = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 300), st.integers(0, 120),
              st.booleans()).map(
        lambda t: UptimeInterval(t[0], at(t[1]), at(t[1] + t[2]),
                                 at(t[1] + t[2]) if t[3] else None)),
    max_size=8)
rows_st = st.lists(st.one_of(st.none(), st.integers(0, 360)), max_size=40)


@pytest.mark.slow  # 1,500 examples
@settings(max_examples=1500, deadline=None)
@given(intervals_st, rows_st, st.integers(0, 500))
def test_verdicts_and_gaps_equal_the_walk(intervals: list[UptimeInterval],
                                          sends: list[int | None], now_s: int) -> None:
    rows = [(n, None if s is None else at(s)) for n, s in enumerate(sends)]
    now = at(now_s)
    verdicts = judge_unknowns(rows, intervals, now, horizon=HORIZON)
    for row_id, sent_at in rows:
        if sent_at is None or sent_at + HORIZON > now:
            continue
        gap = walked_row_gap(sent_at, sent_at + HORIZON, intervals)
        if row_id in verdicts.unproven:
            assert gap is None
        elif row_id in verdicts.unknowable:
            assert verdicts.gaps[row_id] == gap
        else:  # waiting: only when the gap ends the horizon at a receiver heard lately
            assert row_id in verdicts.waiting and gap is not None
            assert gap.end == sent_at + HORIZON


def test_a_receiver_restarted_in_the_same_second_leaves_no_gap() -> None:
    intervals = [UptimeInterval("a", at(0), at(30), at(30)), UptimeInterval("a", at(30), at(200))]
    verdicts = judge_unknowns([(1, at(10))], intervals, at(400), horizon=HORIZON)
    assert verdicts.unproven == [1]


def test_a_break_between_two_receivers_makes_the_row_unknowable_with_that_stretch() -> None:
    intervals = [UptimeInterval("a", at(0), at(30), at(30)), UptimeInterval("a", at(31), at(200))]
    verdicts = judge_unknowns([(1, at(10))], intervals, at(400), horizon=HORIZON)
    assert verdicts.unknowable == [1] and verdicts.gaps[1] == Gap(at(30), at(31))
