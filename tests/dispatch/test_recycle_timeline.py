"""One check's verdicts summed up as retry waves for the run's timeline (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from scheduler.core.time_words import clock_time
from scheduler.dispatch.recycle.timeline import waves
from scheduler.dispatch.recycle.verdicts import Fallback, Final, Retry, Verdict, Wait

NOW = datetime(2026, 11, 27, 13, 0, tzinfo=UTC)


def shown(moment: datetime) -> str:
    return clock_time(moment, "America/Sao_Paulo", seconds=False)


def retry(rule: str, attempt: int, minutes: float) -> Retry:
    return Retry(rule, attempt, NOW + timedelta(minutes=minutes), "…")


def test_retries_due_together_make_one_line_earliest_first() -> None:
    decisions: list[Verdict] = [
        *[retry("no_answer", 2, 120)] * 12,
        *[retry("busy", 2, 10)] * 3, retry("busy", 3, 10.2),
        *[Final("reached: answered", True)] * 5, *[Wait(NOW, "…")] * 2]
    assert waves(decisions, shown) == [
        "3 busy: called again from 10:10 -03:00 (attempt 2)",
        "1 busy: called again from 10:10 -03:00 (attempt 3)",
        "12 not answered: called again from 12:00 -03:00 (attempt 2)",
    ]


def test_rules_due_at_the_same_shown_time_share_a_line() -> None:
    decisions = [retry("no_answer", 2, 120)] * 12 + [retry("busy", 2, 120.5)] * 3
    assert waves(decisions, shown) == [
        "12 not answered, 3 busy: called again from 12:00 -03:00 (attempt 2)"]


def test_sms_retries_are_sent_again_and_fallbacks_are_counted_per_channel() -> None:
    pairs = [(object(), retry("undelivered", 2, 60))] * 2 + [
        (object(), Fallback(2, "sms", "…"))] * 40
    assert waves(pairs, shown) == [
        "2 undelivered: sent again from 11:00 -03:00 (attempt 2)",
        "40 not reached: SMS fallback (attempt 2)"]


def test_many_waves_end_in_one_line_for_the_rest() -> None:
    decisions = [retry("no_answer", 2, 60 * hour) for hour in range(1, 9)]
    lines = waves(decisions, shown, max_lines=3)
    assert lines[:3] == [f"1 not answered: called again from {h:02d}:00 -03:00 (attempt 2)"
                         for h in (11, 12, 13)]
    assert lines[3] == "5 more attempts from 14:00 -03:00 to 18:00 -03:00"
    assert waves([Final("reached: answered", True)], shown) == []
