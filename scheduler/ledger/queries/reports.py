"""What a report reads: runs, aggregates, and rows streamed in chunks.

Aggregates (counts by state, errors, skip reasons) are ``GROUP BY`` queries, so the
database does the counting and Python sees a few hundred rows whatever the run's size. Row
tables (recipients, replies, opt-outs) are read from plain SQL text (with
``pandas.read_sql(..., chunksize=N)`` or through the driver): SQLAlchemy's per-value type
processing is skipped (times arrive as the database's text or datetimes and are parsed by
:func:`pandas.to_datetime` a column at a time), and no ORM object is ever built; figure R1
(a 100,000-row report) is bound by this. Every function takes a Connection that the
caller holds in one snapshot (``access.snapshot(engine)``), so every sheet of a report
describes the same state of the ledger.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, bindparam, select, text

from scheduler.ledger.models import Run
from scheduler.ledger.queries import tallies
from scheduler.ledger.queries.tables import runs

if TYPE_CHECKING:  # pandas is imported by the queries that return frames, when called
    import pandas as pd

#: States that count as errors in the Errors sheet (besides any row with a last error).
ERROR_STATES = ("failed", "unknown", "expired", "undelivered")

_TIME_COLUMNS = ("dispatched_at", "accepted_at", "sent_at", "delivered_at", "read_at",
                 "replied_at", "failed_at")  # fmt: skip


#: When a row counts as sent, delivered, read or replied although its state says less (a
#: later failure, say): a time that proves it. The funnel's definition is
#: ``scheduler.ledger.funnel``; ``state_groups`` reads these, and ``Tally.funnel`` (status)
#: counts by the same conditions.
_SENT_TIME = "COALESCE(accepted_at, sent_at, delivered_at, read_at)"
_DELIVERED_TIME = "COALESCE(delivered_at, read_at)"
_REPLIED = "replied_at IS NOT NULL OR reply_text IS NOT NULL"


def _ids(sql: str) -> Any:
    return text(sql).bindparams(bindparam("ids", expanding=True))


def runs_by_id(conn: Connection, run_ids: Sequence[int]) -> dict[int, Run]:
    """The runs among ``run_ids`` that exist, by id."""
    rows = conn.execute(select(runs).where(runs.c.id.in_(sorted(set(run_ids))))).mappings()
    return {row["id"]: Run(**row) for row in rows}


def state_groups(conn: Connection, run_ids: Sequence[int]) -> pd.DataFrame:
    """Delivery counts by run, sender, step and state, with how many rows of each group have
    reached each transition (whatever their state says).

    Columns: ``run_id, sender, step, state, kind, n, n_sent`` (accepted, sent, delivered or
    read time set), ``n_delivered`` (delivered or read time), ``n_read``, ``n_replied``. A
    few rows per (run, sender, step), whatever the run's size.
    """
    import pandas as pd

    sql = ("SELECT run_id, sender, step, state, MIN(kind) AS kind, COUNT(*) AS n,"
           f" COUNT({_SENT_TIME}) AS n_sent,"
           f" COUNT({_DELIVERED_TIME}) AS n_delivered, COUNT(read_at) AS n_read,"
           f" COUNT(CASE WHEN {_REPLIED} THEN 1 END)"
           " AS n_replied, COUNT(details) AS n_details FROM deliveries WHERE run_id IN :ids"
           " GROUP BY run_id, sender, step, state")  # fmt: skip
    frame = pd.read_sql(_ids(sql), conn, params={"ids": list(run_ids)})
    for name in (
        "run_id",
        "step",
        "n",
        "n_sent",
        "n_delivered",
        "n_read",
        "n_replied",
        "n_details",
    ):
        frame[name] = frame[name].astype("int64")
    frame["sender"] = frame["sender"].astype(object).where(frame["sender"].notna(), "")
    return frame


def detail_rows(conn: Connection, run_ids: Sequence[int], chunk_rows: int
                ) -> Iterator[list[Any]]:  # fmt: skip
    """``(run_id, sender, step, state, details)`` of rows that carry channel details, in
    chunks."""
    sql = ("SELECT run_id, sender, step, state, details FROM deliveries "
           "WHERE run_id IN :ids AND details IS NOT NULL")  # fmt: skip
    result = conn.execute(_ids(sql), {"ids": list(run_ids)})
    while batch := result.fetchmany(chunk_rows):
        yield list(batch)


def send_minutes(conn: Connection, run_id: int) -> pd.DataFrame:
    """Sends of the run per UTC minute (``at``, ``n``): when each sent row left (dispatch
    time, else acceptance, else sent), from the trigger-kept ``run_minutes``
    (:func:`.tallies.minutes`): a few hundred rows, not the run's."""
    import pandas as pd

    frame = pd.DataFrame(tallies.minutes(conn, run_id), columns=["at", "n"])
    frame["n"] = frame["n"].astype("int64")
    return frame


def error_groups(conn: Connection, run_ids: Sequence[int]) -> pd.DataFrame:
    """Errors grouped by run, state and message: count, first and last time, one number."""
    import pandas as pd

    states = ", ".join(f"'{s}'" for s in ERROR_STATES)
    message = "COALESCE(last_error, reason, '')"
    when = "COALESCE(failed_at, updated_at, dispatched_at)"
    sql = (f"SELECT run_id, state, {message} AS message, COUNT(*) AS n, MIN({when}) AS first_at,"
           f' MAX({when}) AS last_at, MIN("to") AS example FROM deliveries '
           f"WHERE run_id IN :ids AND (state IN ({states}) OR last_error IS NOT NULL) "
           f"GROUP BY run_id, state, {message} ORDER BY run_id, COUNT(*) DESC")  # fmt: skip
    return pd.read_sql(_ids(sql), conn, params={"ids": list(run_ids)})


def skip_reasons(conn: Connection, run_ids: Sequence[int]) -> pd.DataFrame:
    """Skipped rows by run and reason word (``invalid_number`` of ``invalid_number: too
    short``): ``run_id, reason, people, n`` (people: distinct numbers; n: rows).

    The database cuts the reason at its first ``:`` so people are counted once per reason
    word, whatever the details after it; one ``GROUP BY`` over the run's skipped rows.
    """
    import pandas as pd

    reason = "COALESCE(reason, '')"
    word = (f"split_part({reason}, ':', 1)" if conn.dialect.name == "postgresql" else
            f"CASE WHEN instr({reason}, ':') > 0 THEN substr({reason}, 1, instr({reason}, ':') - 1)"
            f" ELSE {reason} END")  # fmt: skip
    sql = (
        f'SELECT run_id, {word} AS reason, COUNT(DISTINCT "to") AS people, COUNT(*) AS n '
        f"FROM deliveries WHERE run_id IN :ids AND state = 'skipped' GROUP BY run_id, {word}"
    )
    frame = pd.read_sql(_ids(sql), conn, params={"ids": list(run_ids)})
    for name in ("run_id", "people", "n"):
        frame[name] = frame[name].astype("int64")
    return frame


def variable_samples(conn: Connection, run_id: int, limit: int = 200) -> list[dict[str, Any]]:
    """The CSV columns (``variables``) of the run's first rows: their keys and typical widths."""
    sql = text("SELECT variables FROM deliveries WHERE run_id = :run ORDER BY id LIMIT :n")
    out = []
    for (raw,) in conn.execute(sql, {"run": run_id, "n": limit}):
        try:
            value = json.loads(raw or "{}")
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


# ---------------------------------------------------------------------- streamed tables

#: Columns of a Recipients chunk, in the order of :data:`_DELIVERY_SQL`.
DELIVERY_COLUMNS = ("row", "step", "kind", "to", "state", "reason", "sender", "attempts",
                    "last_error", "message_id", *_TIME_COLUMNS, "reply_text", "variables",
                    "details", "id", "first_id", "attempt", "rule")  # fmt: skip
_DELIVERY_SQL = (
    f"SELECT {', '.join(chr(34) + c + chr(34) for c in DELIVERY_COLUMNS)} "
    "FROM deliveries WHERE run_id = {run_id} ORDER BY id"
)

_REPLY_FROM = (
    "FROM replies r LEFT JOIN deliveries d ON d.id = r.delivery_id "
    "WHERE r.run_id IN :ids OR (r.run_id IS NULL AND d.run_id IN :ids)"
)
_REPLY_SQL = (
    "SELECT COALESCE(r.run_id, d.run_id) AS run_id, r.received_at, r.number, d.step,"
    " r.session_id, r.kind, r.text, r.opt_out, d.variables "
    f"{_REPLY_FROM} ORDER BY r.received_at, r.id"
)

# Driven by the run's rows (index on run_id) with a primary-key probe of the suppression
# list for each, so a long global list costs nothing.
_OPTOUT_SQL = (
    "SELECT t.run_id, s.number, s.created_at, s.source, s.reason, "
    "(SELECT r.text FROM replies r WHERE r.number = s.number AND r.opt_out = :yes "
    " ORDER BY r.id DESC LIMIT 1) AS reply_text "
    'FROM (SELECT d.run_id, d."to" FROM deliveries d JOIN suppressions x ON x.number = d."to" '
    ' WHERE d.run_id IN :ids GROUP BY d.run_id, d."to") t '
    'JOIN suppressions s ON s.number = t."to" ORDER BY t.run_id, s.created_at, s.number'
)


#: Text columns of the Recipients table whose width :func:`text_lengths` measures.
MEASURED_TEXT = ("reason", "last_error", "sender", "message_id", "reply_text")


def text_lengths(conn: Connection, run_ids: Sequence[int]) -> dict[str, int]:
    """The longest value of each :data:`MEASURED_TEXT` column over the runs' deliveries
    (for the Recipients table's widths): one aggregate pass over the runs' rows."""
    sql = _ids("SELECT " + ", ".join(f'MAX(LENGTH("{c}"))' for c in MEASURED_TEXT)
               + " FROM deliveries WHERE run_id IN :ids")  # fmt: skip
    row = conn.execute(sql, {"ids": list(run_ids)}).one()
    return {column: int(n or 0) for column, n in zip(MEASURED_TEXT, row, strict=True)}


def count_deliveries(conn: Connection, run_ids: Sequence[int]) -> int:
    """Rows of the Recipients table."""
    sql = _ids("SELECT COUNT(*) FROM deliveries WHERE run_id IN :ids")
    return int(conn.execute(sql, {"ids": list(run_ids)}).scalar() or 0)


def delivery_chunks(conn: Connection, run_id: int, chunk_rows: int
                    ) -> Iterator[dict[str, list[Any]]]:  # fmt: skip
    """The run's deliveries in plan order, ``chunk_rows`` at a time, as column → raw values.

    Read through the driver (no per-value processing): the widest table of a report is
    read at the speed of the database driver. ``run_id`` is an int, written as a literal.
    """
    result = conn.exec_driver_sql(_DELIVERY_SQL.format(run_id=int(run_id)))
    while batch := result.fetchmany(chunk_rows):
        columns = dict(zip(DELIVERY_COLUMNS, map(list, zip(*batch, strict=True)), strict=True))
        columns["run_id"] = [run_id] * len(batch)
        yield columns


def count_replies(conn: Connection, run_ids: Sequence[int]) -> int:
    """Rows of the Replies table."""
    sql = _ids(f"SELECT COUNT(*) {_REPLY_FROM}")
    return int(conn.execute(sql, {"ids": list(run_ids)}).scalar() or 0)


def reply_chunks(conn: Connection, run_ids: Sequence[int], chunk_rows: int
                 ) -> Iterator[pd.DataFrame]:  # fmt: skip
    """Replies to these runs, oldest first, with the replying recipient's CSV columns."""
    import pandas as pd

    yield from pd.read_sql(_ids(_REPLY_SQL), conn, params={"ids": list(run_ids)},
                           chunksize=chunk_rows)  # fmt: skip


def optouts(conn: Connection, run_ids: Sequence[int]) -> pd.DataFrame:
    """Recipients of these runs on the suppression list, with their opt-out message.

    Read whole: a run's opt-outs are a small share of its recipients.
    """
    import pandas as pd

    return pd.read_sql(_ids(_OPTOUT_SQL), conn, params={"ids": list(run_ids), "yes": True})
