"""Cheap marks of what a run's ``unknown`` verdicts and its skip reasons are read from
(issue 34, H1): which rows are ``unknown`` or ``skipped`` (their count and two sums of their
ids, read from the claim index alone, never the rows), and the newest event.
:mod:`scheduler.views.verdict_memo` keeps what was read while its marks stay the same."""

from __future__ import annotations

from sqlalchemy import BigInteger, Connection, cast, func, select, text

from scheduler.ledger.queries.tables import deliveries, events, runs
from scheduler.ledger.states import DeliveryState as S

#: The ids' second sum is of their squares modulo this prime: it stays far below 2**63.
MODULUS = 65521


def state_mark(conn: Connection, run_id: int, state: str) -> tuple[int, int, int]:
    """(how many rows of the run are in ``state``, the sum of their ids, the sum of the
    squares of their ids modulo :data:`MODULUS`): rows entering or leaving the state change
    it (swaps with equal counts, sums and sums of squares would not)."""
    d = deliveries.c
    folded = cast(d.id % MODULUS, BigInteger)  # its square overflows PostgreSQL's integer
    count, total, squares = conn.execute(
        select(func.count(), func.coalesce(func.sum(d.id), 0),
               func.coalesce(func.sum(folded * folded), 0))
        .where(d.run_id == run_id, d.state == state)).one()
    return int(count), int(total), int(squares)


def unknown_mark(conn: Connection, run_id: int) -> tuple[int, int, int]:
    """:func:`state_mark` of the run's ``unknown`` rows."""
    return state_mark(conn, run_id, str(S.UNKNOWN))


def skipped_mark(conn: Connection, run_id: int) -> tuple[int, int, int]:
    """:func:`state_mark` of the run's ``skipped`` rows (a skipped row's reason never
    changes)."""
    return state_mark(conn, run_id, str(S.SKIPPED))


def newest_event(conn: Connection) -> int:
    """The newest event's id (0: none): a new proof (a ``messages.sent`` that may match
    no row) changes it."""
    return int(conn.execute(select(func.coalesce(func.max(events.c.id), 0))).scalar_one())


def run_born(conn: Connection, run_id: int) -> str:
    """When the run was made (as text; empty for no such run): a ledger made again at the
    same place gives its run of the same id another moment."""
    born = conn.execute(select(runs.c.created_at).where(runs.c.id == run_id)).scalar()
    return "" if born is None else str(born)


def send_minutes(conn: Connection, run_id: int) -> int:
    """A digest of the run's sends per minute (``run_minutes``, kept by triggers on
    ``deliveries``: a few thousand rows for a run of 1,000,000): a row sent again moves to
    a later minute and changes it, though it leaves and enters ``unknown`` in between."""
    found = conn.execute(text("SELECT minute, SUM(n) FROM run_minutes WHERE run_id = :run "
                              "GROUP BY minute HAVING SUM(n) <> 0 ORDER BY minute"),
                         {"run": run_id}).all()
    return hash(tuple((str(minute), int(n)) for minute, n in found))
