"""``[audience]`` in the claim path: which rows of a batch a number's frequency caps or the
unengaged hold keep back, counted over every campaign, with fixed datetimes (both
databases), and those rows skipped with their reason, later steps too."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update

from scheduler.ledger import access
from scheduler.ledger.queries import audience as aq
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries.tables import deliveries, replies
from scheduler.ledger.run_reads import VerdictReads
from scheduler.ledger.runs import Ledger
from tests.factories import T0, make_run, number

#: 00:00 in São Paulo on T0's day (T0 is 09:00 there).
DAY_START = T0 - timedelta(hours=9)


def _sent(ledger: Ledger, run_id: int, to: str, step: int, at: datetime,
          state: str = "delivered", **stamps: Any) -> int:
    """Make row (run, to, step) a message dispatched at ``at`` in ``state``; its id."""
    with access.transaction(ledger.engine, "test: a past send") as conn:
        row_id = conn.execute(select(deliveries.c.id).where(
            deliveries.c.run_id == run_id, deliveries.c.to == to,
            deliveries.c.step == step)).scalar_one()
        conn.execute(update(deliveries).where(deliveries.c.id == row_id).values(
            state=state, dispatched_at=at, sender="s1", **stamps))
    return int(row_id)


def _batch(ledger: Ledger, run_id: int, *tos: str) -> list[tuple[int, str]]:
    """(id, to) of the step-0 rows of ``run_id`` to ``tos``, in that order (repeats: the
    same number's next step)."""
    seen: dict[str, int] = {}
    out = []
    with access.read(ledger.engine, "test: batch") as conn:
        for to in tos:
            step = seen[to] = seen.get(to, -1) + 1
            out.append((int(conn.execute(select(deliveries.c.id).where(
                deliveries.c.run_id == run_id, deliveries.c.to == to,
                deliveries.c.step == step)).scalar_one()), to))
    return out


def _held(ledger: Ledger, claims: list[tuple[int, str]], *, day: int | None = None,
          week: int | None = None, hold: int | None = None) -> dict[int, str]:
    with access.transaction(ledger.engine, "test: audience") as conn:
        return aq.held_back(conn, claims, T0, max_per_day=day, max_per_week=week,
                            hold_unengaged_after=hold, day_start=DAY_START)


def test_the_day_cap_counts_every_campaigns_sends_to_the_number(ledger: Ledger) -> None:
    a = make_run(ledger, 2, steps=2, name="a")
    b = make_run(ledger, 2, name="b")
    _sent(ledger, a, number(0), 0, T0 - timedelta(hours=2))
    _sent(ledger, b, number(0), 0, T0 - timedelta(hours=1), state="read")
    _sent(ledger, a, number(1), 0, DAY_START - timedelta(minutes=1))  # yesterday, local
    c = make_run(ledger, 2, name="c")
    claims = _batch(ledger, c, number(0), number(1))
    assert _held(ledger, claims, day=2) == {
        claims[0][0]: "frequency_cap: 2 messages to this number today (max_per_day = 2)"}
    assert _held(ledger, claims, day=3) == {}
    # yesterday's message counts in the week
    assert _held(ledger, claims, week=1) == {
        claims[0][0]: "frequency_cap: 2 messages to this number in 7 days "
                      "(max_per_week = 1)",
        claims[1][0]: "frequency_cap: 1 message to this number in 7 days (max_per_week = 1)"}


def test_the_week_is_the_last_seven_days_and_only_sends_count(ledger: Ledger) -> None:
    old = make_run(ledger, 1, steps=6, name="old")
    _sent(ledger, old, number(0), 0, T0 - timedelta(days=7, minutes=1))  # out of the week
    _sent(ledger, old, number(0), 1, T0 - timedelta(days=6, hours=23))
    _sent(ledger, old, number(0), 2, T0 - timedelta(days=3), state="unknown")  # may be sent
    _sent(ledger, old, number(0), 3, T0 - timedelta(days=2), state="failed")  # refused
    _sent(ledger, old, number(0), 4, T0 - timedelta(hours=1), state="planned")  # a retry
    _sent(ledger, old, number(0), 5, T0 - timedelta(hours=1), state="skipped")
    new = make_run(ledger, 1, name="new")
    claims = _batch(ledger, new, number(0))
    assert _held(ledger, claims, week=3, day=1) == {}
    assert _held(ledger, claims, week=2) == {
        claims[0][0]: "frequency_cap: 2 messages to this number in 7 days (max_per_week = 2)"}


def test_rows_of_one_batch_to_one_number_count_each_other(ledger: Ledger) -> None:
    run_id = make_run(ledger, 2, steps=3, name="a")
    claims = _batch(ledger, run_id, number(0), number(1), number(0), number(0))
    held = _held(ledger, claims, day=1)
    assert held == {
        claims[2][0]: "frequency_cap: 1 message to this number today (max_per_day = 1)",
        claims[3][0]: "frequency_cap: 1 message to this number today (max_per_day = 1)"}
    assert _held(ledger, claims, day=2) == {
        claims[3][0]: "frequency_cap: 2 messages to this number today (max_per_day = 2)"}
    # called after the claim, in its transaction: the batch's own rows are not counted twice
    with access.transaction(ledger.engine, "test: claim then audience") as conn:
        assert dq.claim(conn, [(i, "s1") for i, _to in claims], T0) == {i for i, _ in claims}
        after = aq.held_back(conn, claims, T0, max_per_day=1, max_per_week=None,
                             hold_unengaged_after=None, day_start=DAY_START)
    assert after == held


def test_a_number_that_never_reads_nor_replies_is_held(ledger: Ledger) -> None:
    past = make_run(ledger, 5, steps=5, name="past")
    for i in range(5):
        for step in range(5):
            at = T0 - timedelta(days=29 - step)
            stamps: dict[str, Any] = {}
            if i == 1 and step == 3:
                stamps = {"state": "read", "read_at": at + timedelta(hours=1)}
            if i == 2 and step == 0:
                stamps = {"replied_at": at + timedelta(hours=1)}
            if i == 4 and step == 0:
                at = T0 - timedelta(days=31)  # out of the 30 days: 4 in them
            if i == 0 and step == 4:
                at = T0 - timedelta(hours=1)  # today
            _sent(ledger, past, number(i), step, at, **stamps)
    with access.transaction(ledger.engine, "test: a reply tied to no delivery") as conn:
        conn.execute(replies.insert().values(number=number(3), kind="text", text="oi",
                                             received_at=T0 - timedelta(days=10)))
    new = make_run(ledger, 5, name="new")
    claims = _batch(ledger, new, *(number(i) for i in range(5)))
    assert _held(ledger, claims, hold=5) == {
        claims[0][0]: "unengaged: 5 messages in 30 days, none read or replied to "
                      "(hold_unengaged_after = 5)"}
    # number 4 has 4 unread in 30 days: held from a hold of 4
    assert _held(ledger, claims, hold=4) == {
        claims[0][0]: "unengaged: 5 messages in 30 days, none read or replied to "
                      "(hold_unengaged_after = 4)",
        claims[4][0]: "unengaged: 4 messages in 30 days, none read or replied to "
                      "(hold_unengaged_after = 4)"}
    # a cap is said first
    assert _held(ledger, claims, hold=5, day=1) == {
        claims[0][0]: "frequency_cap: 1 message to this number today (max_per_day = 1)"}


def test_no_rule_no_statement_and_an_unknown_number_passes(ledger: Ledger) -> None:
    run_id = make_run(ledger, 1, name="a")
    claims = _batch(ledger, run_id, number(0))
    assert _held(ledger, claims) == {}
    assert _held(ledger, claims, day=1, week=1, hold=1) == {}
    assert _held(ledger, [], day=1) == {}


def test_held_rows_are_skipped_with_their_reason_and_later_steps_too(ledger: Ledger) -> None:
    run_id = make_run(ledger, 3, steps=2, name="a")
    claims = _batch(ledger, run_id, number(0), number(1), number(2))
    reasons = {claims[0][0]: "frequency_cap: 1 message to this number today "
                             "(max_per_day = 1)"}
    with access.transaction(ledger.engine, "test: claim some") as conn:
        dq.claim(conn, [(claims[1][0], "s1")], T0)  # claimed in the batch's transaction
    reasons[claims[1][0]] = "unengaged: 5 messages in 30 days, none read or replied to " \
                            "(hold_unengaged_after = 5)"
    with access.transaction(ledger.engine, "test: skip") as conn:
        aq.skip_held_back(conn, reasons, T0)
        aq.skip_held_back(conn, {}, T0)
    with access.read(ledger.engine, "test: read") as conn:
        rows = {(to, step): (state, reason) for to, step, state, reason in conn.execute(
            select(deliveries.c.to, deliveries.c.step, deliveries.c.state,
                   deliveries.c.reason).where(deliveries.c.run_id == run_id))}
    assert rows == {
        (number(0), 0): ("skipped", reasons[claims[0][0]]),
        (number(0), 1): ("skipped", "previous step not sent"),
        (number(1), 0): ("skipped", reasons[claims[1][0]]),
        (number(1), 1): ("skipped", "previous step not sent"),
        (number(2), 0): ("planned", None),
        (number(2), 1): ("planned", None),
    }
    with access.read(ledger.engine, "test: kinds") as conn:
        assert VerdictReads(conn).skipped_by_kind(run_id) == {"previous step not sent": 2,
                                                 "frequency_cap": 1, "unengaged": 1}
