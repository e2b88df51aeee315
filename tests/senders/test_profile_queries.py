"""The sender profiles in the ledger (migration 0009): made once, moved with a history row
per real change, a retired sender moved by a person only, sends counted over every run."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from alembic import command
from sqlalchemy import inspect

from scheduler.ledger import access
from scheduler.ledger.db import alembic_config, open_ledger
from scheduler.ledger.queries import sender_profiles as spq
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import (
    HELD_STATES,
    SENDING_STATES,
    ChangeSource,
    SenderStatus,
)
from tests.factories import T0
from tests.senders.support import dispatched_run

S = SenderStatus
HOUR = timedelta(hours=1)


def test_a_ledger_at_0008_is_migrated_keeping_its_deliveries(ledger_url: str) -> None:
    engine = open_ledger(ledger_url)
    try:
        run_id = dispatched_run(Ledger(engine), [("s1", T0), ("s2", T0 + HOUR)])
        command.downgrade(alembic_config(engine), "0008")  # the schema before profiles
        tables = set(inspect(engine).get_table_names())
        assert not {"sender_profiles", "sender_state_changes"} & tables
        engine.dispose()
        engine = open_ledger(ledger_url)  # this program opens the old ledger: upgrades it
        found = inspect(engine)
        assert {"sender_profiles", "sender_state_changes"} <= set(found.get_table_names())
        indexes = {ix["name"]: ix["column_names"] for ix in found.get_indexes("deliveries")}
        assert indexes["ix_deliveries_sender_dispatched"] == ["sender", "dispatched_at"]
        with access.transaction(engine, "use the new tables") as conn:
            assert spq.sends_since(conn, ["s1", "s2"], T0) == {"s1": 1, "s2": 1}
            assert spq.ensure_profiles(conn, ["s1"], T0) == ["s1"]
            row = spq.profiles(conn)["s1"]
        assert (row.state, row.warm_day, row.throttle, row.since) == (S.WARMING, 1, 1.0, T0)
        assert Ledger(engine).counts(run_id) == {"dispatching": 2}
    finally:
        engine.dispose()


def test_the_states_that_send_and_those_that_hold_cover_every_state() -> None:
    assert set(SenderStatus) == SENDING_STATES | HELD_STATES
    assert not SENDING_STATES & HELD_STATES


def test_a_profile_is_made_once_with_one_history_row(ledger: Ledger) -> None:
    with access.transaction(ledger.engine) as conn:
        assert spq.ensure_profiles(conn, ["s2", "s1"], T0) == ["s1", "s2"]
        assert spq.ensure_profiles(conn, ["s1", "s3"], T0 + HOUR) == ["s3"]
        rows = spq.profiles(conn)
        changes = spq.history(conn)
    assert rows["s1"].first_seen_at == T0 and rows["s3"].first_seen_at == T0 + HOUR
    assert [(c.sender, c.from_state, c.to_state, c.source) for c in changes] == [
        ("s3", None, S.WARMING, ChangeSource.ENGINE),
        ("s2", None, S.WARMING, ChangeSource.ENGINE),
        ("s1", None, S.WARMING, ChangeSource.ENGINE)]


def test_change_state_writes_history_only_when_state_or_reason_changes(
        ledger: Ledger) -> None:
    with access.transaction(ledger.engine) as conn:
        spq.ensure_profiles(conn, ["s1"], T0)
        assert spq.change_state(conn, "s1", S.THROTTLED, "429 burst", ChangeSource.ENGINE,
                                T0 + HOUR, score=60.0, throttle=0.5)
        # same state, same reason: only the score and throttle move, no history row
        assert not spq.change_state(conn, "s1", S.THROTTLED, "429 burst",
                                    ChangeSource.ENGINE, T0 + 2 * HOUR, score=70.0,
                                    throttle=0.75)
        # same state, a new reason: a history row, and the state's start stays
        assert spq.change_state(conn, "s1", S.THROTTLED, "5xx and time-outs",
                                ChangeSource.ENGINE, T0 + 3 * HOUR)
        row = spq.profiles(conn, ["s1"])["s1"]
        changes = spq.history(conn, "s1")
    assert (row.state, row.reason, row.since, row.score, row.throttle) == (
        S.THROTTLED, "5xx and time-outs", T0 + HOUR, 70.0, 0.75)
    assert [(c.from_state, c.to_state, c.reason, c.at, c.score) for c in changes] == [
        (S.THROTTLED, S.THROTTLED, "5xx and time-outs", T0 + 3 * HOUR, 70.0),
        (S.WARMING, S.THROTTLED, "429 burst", T0 + HOUR, 60.0),
        (None, S.WARMING, spq.NEW_SENDER_REASON, T0, None)]


def test_a_change_is_part_of_the_callers_transaction(ledger: Ledger) -> None:
    with access.transaction(ledger.engine) as conn:
        spq.ensure_profiles(conn, ["s1"], T0)
    with pytest.raises(RuntimeError), access.transaction(ledger.engine) as conn:
        assert spq.change_state(conn, "s1", S.PAUSED, "opt-outs", ChangeSource.ENGINE,
                                T0 + HOUR)
        raise RuntimeError("the caller's work failed")
    with access.read(ledger.engine) as conn:
        assert spq.profiles(conn)["s1"].state == S.WARMING
        assert len(spq.history(conn, "s1")) == 1


def test_a_retired_sender_is_moved_by_a_person_only(ledger: Ledger) -> None:
    with access.transaction(ledger.engine) as conn:
        assert spq.change_state(conn, "s9", S.RETIRED, "number returned",
                                ChangeSource.OPERATOR, T0)  # no profile yet: made first
        for source in (ChangeSource.ENGINE, ChangeSource.EVENT):
            assert not spq.change_state(conn, "s9", S.HEALTHY, "looks fine", source,
                                        T0 + HOUR, throttle=0.5)
        held = spq.profiles(conn)["s9"]
        assert (held.state, held.reason, held.throttle) == (S.RETIRED, "number returned", 1.0)
        assert spq.change_state(conn, "s9", S.WARMING, "back in use",
                                ChangeSource.OPERATOR, T0 + 2 * HOUR)
        assert [c.to_state for c in spq.history(conn, "s9")] == [
            S.WARMING, S.RETIRED, S.WARMING]


def test_sends_since_counts_every_run_and_not_rows_waiting_to_be_sent(
        ledger: Ledger) -> None:
    dispatched_run(ledger, [("s1", T0 - HOUR), ("s1", T0), ("s2", T0 + HOUR)], planned=3,
                   name="one")
    dispatched_run(ledger, [("s1", T0 + 2 * HOUR)], name="two")
    with access.read(ledger.engine) as conn:
        assert spq.sends_since(conn, ["s1", "s2", "s3"], T0) == {"s1": 2, "s2": 1, "s3": 0}
        assert spq.sends_since(conn, ["s1"], T0 + 3 * HOUR) == {"s1": 0}
        assert spq.sends_since(conn, [], T0) == {}


def test_a_warm_up_day_advances_once_per_date(ledger: Ledger) -> None:
    with access.transaction(ledger.engine) as conn:
        spq.ensure_profiles(conn, ["s1", "s2"], T0)
        assert spq.advance_warm_day(conn, "s1", date(2026, 11, 23), 2)
        assert not spq.advance_warm_day(conn, "s1", date(2026, 11, 23), 3)  # another worker
        assert spq.advance_warm_day(conn, "s1", date(2026, 11, 24), 3)
        rows = spq.profiles(conn)
    assert (rows["s1"].warm_day, rows["s1"].warm_day_date) == (3, date(2026, 11, 24))
    assert (rows["s2"].warm_day, rows["s2"].warm_day_date) == (1, None)
