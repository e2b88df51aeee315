"""Per-run tallies kept by database triggers: counts by state, funnel and sends per minute
without scanning a run's rows.

Why this is hot, and why triggers: ``campaign status``, the progress bar and every page
and live update of the dashboard ask "how many rows of this run are in each state, how
far did they get, when were they sent". Counted from ``deliveries`` that is a scan of the
run's rows (16.7 s for ``status`` on a 1,000,000-row run, issue 23), done again every
second by a live page. So ``run_tallies`` keeps one counter per (run, step, state,
``marks``, worker) and ``run_minutes`` one per (run, UTC minute of the send); a read sums
a few dozen rows through their primary key. The counters are moved by triggers on
``deliveries`` (INSERT, UPDATE, DELETE), in the same transaction as the change, so every
code path that writes a delivery (the plan's bulk insert and COPY, claims, outcomes, the
receiver, requeue, cancel, suppression, a re-plan's deletes) is counted, and a reader of
one snapshot sees counters that match the rows exactly. Code that must remember to call
a counting function would miss the path nobody thought of.

- SQLite: row triggers. The UPDATE trigger has a ``WHEN`` comparing only the counted
  columns, so the many updates that change none of them (``details``, ``updated_at``,
  ``message_id``) cost one comparison. SQLite has one writer: ``shard`` is always 0.
- PostgreSQL: statement-level triggers with transition tables: one grouped upsert per
  statement (a claim of 500 rows is one upsert of a few counters, and ``COPY`` fires them
  too). ``shard`` is ``pg_backend_pid()``: two transactions never write the same counter
  row, so workers and the receiver updating one run never wait on each other's counter
  locks, nor deadlock on them. A reader sums over the shards.

``marks`` is a bitmask of the row's time columns that are set (:data:`.run_rows.MARKS`):
the funnel's definitions (``scheduler.ledger.funnel``; :func:`funnel` and
:func:`tracking_funnel`) count a row by its state *or* by a time that proves a stage, so the
counters keep both.
Counters that reach 0 stay (readers skip them). A later migration that rebuilds
``deliveries`` on SQLite (Alembic's batch mode copies the table) drops its triggers: it
must run :func:`create_statements` again.

One exception to the row triggers, SQLite's plan insert (:func:`count_bulk_insert`): any
row trigger on INSERT, even one whose ``WHEN`` is false, cost 3–4 µs per row, about 7 s
of CPU for a 1,000,000-row plan's 2,000,000 rows. So the plan's insert drops the
INSERT triggers (these two and :mod:`sender_tallies`'s), inserts, counts its new rows in
one grouped upsert per table and creates the triggers again, all in its transaction.
Still counted in the same transaction: SQLite's DDL is transactional (a rollback brings
the triggers back, a reader's snapshot never lacks them) and SQLite has one writer, so
while the plan holds the write lock no other connection writes a row the missing
triggers would not count.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import Connection, text

from scheduler.ledger.queries import sender_tallies
from scheduler.ledger.run_rows import ACCEPTED, DELIVERED, ENDED, READ, REPLIED, SENT, Tally

#: The columns of a counter's key (besides the shard) and of the minutes' key.
TALLY_KEY = ("run_id", "step", "state", "marks", "worker")
MINUTE_KEY = ("run_id", "minute")


def _marks(row: str) -> str:
    """SQL for the ``marks`` of ``row`` (``NEW``, ``OLD`` or a transition table's alias)."""
    bits = [(f"{row}.accepted_at IS NOT NULL", ACCEPTED), (f"{row}.sent_at IS NOT NULL", SENT),
            (f"{row}.delivered_at IS NOT NULL", DELIVERED),
            (f"{row}.read_at IS NOT NULL", READ),
            (f"{row}.replied_at IS NOT NULL OR {row}.reply_text IS NOT NULL", REPLIED),
            (f"{row}.ended_at IS NOT NULL", ENDED)]
    return "(" + " + ".join(f"CASE WHEN {cond} THEN {bit} ELSE 0 END"
                            for cond, bit in bits) + ")"


def _sent_at(row: str) -> str:
    """SQL for when ``row`` left (the report's sends per minute): dispatch, else acceptance,
    else the sent event."""
    return f"COALESCE({row}.dispatched_at, {row}.accepted_at, {row}.sent_at)"


def _minute(row: str, dialect: str) -> str:
    """SQL for the UTC minute of :func:`_sent_at` (SQLite stores times as text, UTC)."""
    if dialect == "sqlite":
        return f"substr({_sent_at(row)}, 1, 16)"
    return f"date_trunc('minute', {_sent_at(row)})"


def _tally_columns(row: str) -> str:
    return (f"{row}.run_id, {row}.step, {row}.state, {_marks(row)}, "
            f"COALESCE({row}.worker, '')")


_TALLY_INSERT = "INSERT INTO run_tallies (run_id, step, state, marks, worker, shard, n) "
_TALLY_UPSERT = (" ON CONFLICT (run_id, step, state, marks, worker, shard)"
                 " DO UPDATE SET n = run_tallies.n + excluded.n")
_MINUTE_INSERT = "INSERT INTO run_minutes (run_id, minute, shard, n) "
_MINUTE_UPSERT = (" ON CONFLICT (run_id, minute, shard)"
                  " DO UPDATE SET n = run_minutes.n + excluded.n")


# ---------------------------------------------------------------------- SQLite triggers


def _sqlite_tally(row: str, delta: int) -> str:
    return (f"{_TALLY_INSERT}VALUES ({_tally_columns(row)}, 0, {delta}){_TALLY_UPSERT};")


def _sqlite_minute(row: str, delta: int) -> str:
    # INSERT ... SELECT needs a WHERE before ON CONFLICT (SQLite's parsing rule)
    return (f"{_MINUTE_INSERT}SELECT {row}.run_id, {_minute(row, 'sqlite')}, 0, {delta} "
            f"WHERE {_sent_at(row)} IS NOT NULL{_MINUTE_UPSERT};")


def _sqlite_triggers() -> list[str]:
    tally_changed = " OR ".join([
        *(f"OLD.{c} IS NOT NEW.{c}" for c in ("run_id", "step", "state", "worker")),
        f"{_marks('OLD')} <> {_marks('NEW')}"])
    minute_changed = ("OLD.run_id IS NOT NEW.run_id OR "
                      f"{_minute('OLD', 'sqlite')} IS NOT {_minute('NEW', 'sqlite')}")
    return [
        "CREATE TRIGGER run_tallies_insert AFTER INSERT ON deliveries BEGIN "
        f"{_sqlite_tally('NEW', 1)} END",
        "CREATE TRIGGER run_tallies_delete AFTER DELETE ON deliveries BEGIN "
        f"{_sqlite_tally('OLD', -1)} END",
        # a plan's rows have no send time yet: the WHEN spares the million-row insert
        f"CREATE TRIGGER run_minutes_insert AFTER INSERT ON deliveries "
        f"WHEN {_sent_at('NEW')} IS NOT NULL BEGIN {_sqlite_minute('NEW', 1)} END",
        f"CREATE TRIGGER run_minutes_delete AFTER DELETE ON deliveries "
        f"WHEN {_sent_at('OLD')} IS NOT NULL BEGIN {_sqlite_minute('OLD', -1)} END",
        f"CREATE TRIGGER run_tallies_update AFTER UPDATE ON deliveries WHEN {tally_changed} "
        f"BEGIN {_sqlite_tally('OLD', -1)} {_sqlite_tally('NEW', 1)} END",
        f"CREATE TRIGGER run_minutes_update AFTER UPDATE ON deliveries WHEN {minute_changed} "
        f"BEGIN {_sqlite_minute('OLD', -1)} {_sqlite_minute('NEW', 1)} END",
    ]


# ---------------------------------------------------------------------- PostgreSQL triggers


def _pg_changes(sources: list[tuple[str, int]]) -> list[str]:
    """The two grouped upserts of one statement: ``sources`` are (transition table, sign)."""
    tallies = " UNION ALL ".join(
        f"SELECT {_tally_columns('t')}, {sign} AS d FROM {table} t" for table, sign in sources)
    minutes = " UNION ALL ".join(
        f"SELECT t.run_id, {_minute('t', 'postgresql')}, {sign} AS d FROM {table} t "
        f"WHERE {_sent_at('t')} IS NOT NULL" for table, sign in sources)
    return [
        f"{_TALLY_INSERT}SELECT k1, k2, k3, k4, k5, pg_backend_pid(), SUM(d) "
        f"FROM ({tallies}) u(k1, k2, k3, k4, k5, d) "
        "GROUP BY k1, k2, k3, k4, k5 HAVING SUM(d) <> 0" + _TALLY_UPSERT,
        f"{_MINUTE_INSERT}SELECT k1, k2, pg_backend_pid(), SUM(d) "
        f"FROM ({minutes}) u(k1, k2, d) GROUP BY k1, k2 HAVING SUM(d) <> 0" + _MINUTE_UPSERT,
    ]


# ---------------------------------------------------------------------- DDL (the migration)


def create_statements(dialect: str) -> list[str]:
    """The triggers (and PostgreSQL's trigger functions) that keep the tallies."""
    if dialect == "sqlite":
        return _sqlite_triggers()
    return sender_tallies.pg_triggers("run_tallies", lambda s: "; ".join(_pg_changes(s)))


def drop_statements(dialect: str) -> list[str]:
    """Undo :func:`create_statements`."""
    if dialect == "sqlite":
        return [f"DROP TRIGGER IF EXISTS {table}_{event}"
                for table in ("run_tallies", "run_minutes")
                for event in ("insert", "update", "delete")]
    return sender_tallies.pg_drops("run_tallies")


def backfill_statements(dialect: str) -> list[str]:
    """Count the rows already stored (one ``GROUP BY`` per table, shard 0)."""
    minute = _minute("d", dialect)
    return [
        f"{_TALLY_INSERT}SELECT {_tally_columns('d')}, 0, COUNT(*) FROM deliveries d "
        "GROUP BY 1, 2, 3, 4, 5",
        f"{_MINUTE_INSERT}SELECT d.run_id, {minute}, 0, COUNT(*) FROM deliveries d "
        f"WHERE {_sent_at('d')} IS NOT NULL GROUP BY 1, 2",
    ]


# ---------------------------------------------------------------------- SQLite bulk insert

# Hot: a million-row plan on SQLite (see the module's docstring). The triggers are put back
# from their stored text, so whatever the migrations made them stays. New rows are those
# above the highest id before the insert (SQLite gives a new row an id above every stored
# one), read by that id range: "run_id + 0" keeps SQLite off the claim index, through
# which each chunk would read the whole run again. The key expressions are the triggers'.
_INSERT_TRIGGERS = text(
    "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'deliveries'"
    " AND name IN ('run_tallies_insert', 'run_minutes_insert',"
    f" '{sender_tallies.INSERT_TRIGGER}') ORDER BY name")
_MAX_ID = text("SELECT COALESCE(MAX(id), 0) FROM deliveries")
_NEW_ROWS = "FROM deliveries d WHERE d.run_id + 0 = :run AND d.id > :before"
_COUNT_NEW = text(f"{_TALLY_INSERT}SELECT {_tally_columns('d')}, 0, COUNT(*) {_NEW_ROWS} "
                  "GROUP BY 1, 2, 3, 4, 5" + _TALLY_UPSERT)
# the caller's own counts of its new rows (no time column, no worker: marks 0, worker '')
_COUNT_GIVEN = text(f"{_TALLY_INSERT}VALUES (:run, :step, :state, 0, '', 0, :n)"
                    + _TALLY_UPSERT)
_COUNT_NEW_MINUTES = text(
    f"{_MINUTE_INSERT}SELECT d.run_id, {_minute('d', 'sqlite')}, 0, COUNT(*) {_NEW_ROWS} "
    f"AND {_sent_at('d')} IS NOT NULL GROUP BY 1, 2" + _MINUTE_UPSERT)


def count_bulk_insert(conn: Connection, run_id: int, insert: Callable[[], object], *,
                      send_times: bool = True, senders: bool = True,
                      counts: Mapping[tuple[int, str], int] | None = None) -> None:
    """SQLite: run ``insert`` (new rows of ``run_id`` only, in the caller's transaction)
    without the INSERT triggers, then count its rows in one grouped upsert per table
    (``send_times=False``: the caller writes no send time, ``run_minutes`` is left alone:
    that scan of the new rows cost as much as the other; ``senders=False``: the caller
    writes no sender, so no new row counts in ``run_sender_tallies``, see
    :mod:`sender_tallies`; ``counts``: the caller's own count of its rows by (step,
    state), when none of them has a time column or a worker: one upsert of those few
    counters, not a scan of the new rows, 2.5 s of a 1,000,000-row plan's CPU).

    The rows are counted and the triggers put back even when ``insert`` fails part way
    (the rows it wrote stay until the caller rolls back), so the counters equal the rows
    whatever the caller does next.
    """
    driver = conn.connection.driver_connection
    assert driver is not None
    if not driver.in_transaction:
        # Python's sqlite3 opens a transaction before DML only: a DROP TRIGGER before the
        # plan's first INSERT would be committed on its own, the triggers gone for good.
        # IMMEDIATE: take the write lock now (waiting out another writer, busy_timeout);
        # a deferred BEGIN would read first and then fail at once ("database is locked",
        # SQLITE_BUSY_SNAPSHOT) if a receiver committed between the reads and the DROP
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    triggers = conn.execute(_INSERT_TRIGGERS).all()
    params = {"run": run_id, "before": int(conn.execute(_MAX_ID).scalar_one())}
    for name, _sql in triggers:
        conn.exec_driver_sql(f"DROP TRIGGER {name}")
    inserted = False
    try:
        insert()
        inserted = True
    finally:
        if inserted and counts is not None:  # a failed insert: its rows are scanned
            if counts:
                conn.execute(_COUNT_GIVEN, [{"run": run_id, "step": step, "state": state,
                                             "n": n} for (step, state), n in counts.items()])
        else:
            conn.execute(_COUNT_NEW, params)
        if send_times:
            conn.execute(_COUNT_NEW_MINUTES, params)
        if senders:
            conn.execute(sender_tallies.COUNT_NEW, params)
        for _name, sql in triggers:
            conn.exec_driver_sql(sql)


# ---------------------------------------------------------------------- reading


_READ = text("SELECT step, state, marks, worker, SUM(n) FROM run_tallies WHERE run_id = :run "
             "GROUP BY step, state, marks, worker HAVING SUM(n) <> 0")
_MINUTES = text("SELECT minute, SUM(n) FROM run_minutes WHERE run_id = :run "
                "GROUP BY minute HAVING SUM(n) <> 0 ORDER BY minute")


def read(conn: Connection, run_id: int) -> Tally:
    """The run's counters (one indexed read of a few dozen rows per shard)."""
    rows = conn.execute(_READ, {"run": run_id}).all()
    return Tally(tuple((int(step), str(state), int(marks), str(worker), int(n))
                       for step, state, marks, worker, n in rows))


def state_counts(conn: Connection, run_id: int) -> dict[str, int]:
    """Rows of the run in each state (``dq.counts_by_state``)."""
    return read(conn, run_id).states()


def minutes(conn: Connection, run_id: int) -> list[tuple[Any, int]]:
    """Sends of the run per UTC minute, oldest first: ``(minute, n)``; the minute is the
    database's own value (text ``YYYY-MM-DD HH:MM`` on SQLite, a UTC time on PostgreSQL)."""
    return [(minute, int(n)) for minute, n in conn.execute(_MINUTES, {"run": run_id})]
