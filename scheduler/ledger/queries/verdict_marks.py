"""Cheap marks of what a run's ``unknown`` verdicts and its skip reasons are read from
(issue 34, H1): which rows are ``unknown`` or ``skipped`` (their count and two sums of their
ids, read from an index alone, never the rows: ``ix_deliveries_marks`` on PostgreSQL, the
claim index on SQLite), the newest event, the run's sends per minute; all of them in one
statement by :func:`read_marks`. :mod:`scheduler.views.verdict_memo` keeps what was read
while its marks stay the same."""

from __future__ import annotations

import hashlib

from sqlalchemy import Connection, text

from scheduler.ledger.run_rows import Marks
from scheduler.ledger.states import DeliveryState as S

#: The ids' second sum is of their squares modulo this prime: it stays far below 2**63.
MODULUS = 65521


#: The run's sends per minute (``run_minutes``, shards summed) as one text: "minute=n"
#: joined in minute order; PostgreSQL gives its MD5 (the text of a long run is ~40 kB),
#: each minute written as its epoch seconds (a time's text costs 3 times more).
_MINUTES_PG = text(
    "SELECT md5(string_agg(date_part('epoch', minute)::bigint::text || '=' || s::text, "
    "',' ORDER BY minute)) FROM "
    "(SELECT minute, SUM(n) AS s FROM run_minutes WHERE run_id = :run GROUP BY minute "
    "HAVING SUM(n) <> 0) m")
_MINUTES_SQLITE = text(
    "SELECT group_concat(minute || '=' || s, ',') FROM (SELECT minute, SUM(n) AS s FROM "
    "run_minutes WHERE run_id = :run GROUP BY minute HAVING SUM(n) <> 0 ORDER BY minute)")


_STATES = "state IN ('unknown', 'skipped')"  # ix_deliveries_marks's predicate, literally
_MARKS = (
    "SELECT x.born, x.newest, x.minutes, s.state, s.n, s.total, s.squares FROM (SELECT "
    "(SELECT created_at FROM runs WHERE id = :run) AS born, "
    "(SELECT COALESCE(MAX(id), 0) FROM events) AS newest, ({minutes}) AS minutes) x "
    "LEFT JOIN (SELECT state, COUNT(*) AS n, SUM(id) AS total, "
    "SUM(CAST(id % {modulus} AS BIGINT) * CAST(id % {modulus} AS BIGINT)) AS squares "
    "FROM deliveries WHERE run_id = :run AND {states} GROUP BY state) s ON 1 = 1")
_MARKS_PG = text(_MARKS.format(minutes=_MINUTES_PG.text, modulus=MODULUS, states=_STATES))
_MARKS_SQLITE = text(_MARKS.format(minutes=_MINUTES_SQLITE.text, modulus=MODULUS,
                                   states=_STATES))


def read_marks(conn: Connection, run_id: int) -> Marks:
    """Every :class:`Marks` of the run in one round trip: each a scalar subquery, the two
    states' marks one grouped index-only scan (on PostgreSQL of ``ix_deliveries_marks``, the
    states written into the statement so that every plan, a prepared one's too, can prove
    the index's predicate; on SQLite of the claim index, whose entries hold the rowid)."""
    postgres = conn.dialect.name == "postgresql"
    rows = conn.execute(_MARKS_PG if postgres else _MARKS_SQLITE, {"run": run_id}).all()
    first = rows[0]
    states = {str(r.state): (int(r.n), int(r.total), int(r.squares))
              for r in rows if r.state is not None}
    minutes = "" if first.minutes is None else (
        str(first.minutes) if postgres
        else hashlib.blake2b(str(first.minutes).encode(), digest_size=16).hexdigest())
    return Marks(born="" if first.born is None else str(first.born),
                 unknown=states.get(str(S.UNKNOWN), (0, 0, 0)),
                 skipped=states.get(str(S.SKIPPED), (0, 0, 0)),
                 newest_event=int(first.newest), minutes=minutes)
