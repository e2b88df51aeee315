"""Everything a report reads from the ledger: runs, aggregates, and rows streamed in chunks.

Aggregates (counts by state, errors, skip reasons) are ``GROUP BY`` queries, so the
database does the counting and Python sees a few hundred rows whatever the run's size. Row
tables (recipients, replies, opt-outs) are read with ``pandas.read_sql(..., chunksize=N)``
from plain SQL text: SQLAlchemy's per-value type processing is skipped (times arrive as the
database's text or datetimes and are parsed by :func:`pandas.to_datetime` a column at a
time), and no ORM object is ever built. Every function takes a Connection that the caller
holds inside one transaction, so every sheet of a report describes the same snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pandas as pd
from sqlalchemy import Connection, bindparam, select, text

from scheduler.ledger.models import Run
from scheduler.reports.exceptions import CampaignNotFound, RunsNotFound

runs_table = Run.__table__  # type: ignore[attr-defined]

#: Rows per chunk when streaming a table.
CHUNK_ROWS = 20_000
#: States that count as errors in the Errors sheet (besides any row with a last error).
ERROR_STATES = ("failed", "unknown", "expired", "undelivered")

_TIME_COLUMNS = ("dispatched_at", "accepted_at", "sent_at", "delivered_at", "read_at",
                 "replied_at", "failed_at")  # fmt: skip


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run as the report shows it; times are aware UTC datetimes."""

    id: int
    campaign: str
    channel: str
    status: str
    timezone: str
    created_at: datetime | None
    fire_time: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    planned_count: int
    stop_reason: str | None
    definition: dict[str, Any] = field(default_factory=dict)


def _zone_name(name: str | None) -> str:
    """The run's IANA zone, or ``UTC`` when it is missing or unknown to this machine."""
    try:
        ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return "UTC"
    return name or "UTC"


def _ids(sql: str) -> Any:
    return text(sql).bindparams(bindparam("ids", expanding=True))


def load_runs(conn: Connection, run_ids: Sequence[int]) -> list[RunInfo]:
    """The runs with these ids, in id order; :class:`RunsNotFound` names any that is missing."""
    wanted = sorted(set(run_ids))
    rows = conn.execute(select(runs_table).where(runs_table.c.id.in_(wanted))).mappings().all()
    found = {row["id"]: row for row in rows}
    missing = [i for i in wanted if i not in found]
    if missing:
        raise RunsNotFound(missing)
    out = []
    for run_id in wanted:
        row = found[run_id]
        try:
            definition = json.loads(row["definition"] or "{}")
        except ValueError:
            definition = {}
        out.append(RunInfo(
            id=run_id, campaign=row["campaign_name"], channel=row["channel"],
            status=row["status"], timezone=_zone_name(row["timezone"]),
            created_at=row["created_at"], fire_time=row["fire_time"],
            started_at=row["started_at"], finished_at=row["finished_at"],
            planned_count=row["planned_count"] or 0, stop_reason=row["stop_reason"],
            definition=definition if isinstance(definition, dict) else {},
        ))  # fmt: skip
    return out


def campaign_run_ids(conn: Connection, name: str) -> list[int]:
    """Every run id of campaign ``name``, oldest first; :class:`CampaignNotFound` if none."""
    ids = list(conn.execute(select(runs_table.c.id).where(runs_table.c.campaign_name == name)
                            .order_by(runs_table.c.id)).scalars())  # fmt: skip
    if not ids:
        raise CampaignNotFound(name)
    return ids


def state_groups(conn: Connection, run_ids: Sequence[int]) -> pd.DataFrame:
    """Delivery counts by run, sender, step, kind, state and which transition times are set.

    Columns: ``run_id, sender, step, kind, state, has_accepted, has_sent, has_delivered,
    has_read, has_replied, n``. A few rows per (run, sender, step), whatever the run's size.
    """
    flags = {
        "has_accepted": "accepted_at IS NOT NULL",
        "has_sent": "sent_at IS NOT NULL",
        "has_delivered": "delivered_at IS NOT NULL",
        "has_read": "read_at IS NOT NULL",
        "has_replied": "replied_at IS NOT NULL OR reply_text IS NOT NULL",
    }
    cases = ", ".join(f"CASE WHEN {cond} THEN 1 ELSE 0 END AS {name}"
                      for name, cond in flags.items())  # fmt: skip
    keys = ", ".join(str(i) for i in range(1, 6 + len(flags)))
    sql = (f"SELECT run_id, sender, step, kind, state, {cases}, COUNT(*) AS n "
           f"FROM deliveries WHERE run_id IN :ids GROUP BY {keys}")  # fmt: skip
    frame = pd.read_sql(_ids(sql), conn, params={"ids": list(run_ids)})
    for name in (*flags, "n", "run_id", "step"):
        frame[name] = frame[name].astype("int64")
    frame["sender"] = frame["sender"].astype(object).where(frame["sender"].notna(), "")
    return frame


def detail_rows(conn: Connection, run_ids: Sequence[int]) -> Iterator[list[Any]]:
    """``(run_id, sender, step, details)`` of rows that carry channel details, in chunks."""
    sql = ("SELECT run_id, sender, step, details FROM deliveries "
           "WHERE run_id IN :ids AND details IS NOT NULL")  # fmt: skip
    result = conn.execute(_ids(sql), {"ids": list(run_ids)})
    while batch := result.fetchmany(CHUNK_ROWS):
        yield list(batch)


def send_times(conn: Connection, run_id: int) -> Iterator[pd.Series]:
    """When each sent row of the run left (dispatch time, else acceptance, else sent), in chunks."""
    sql = text("SELECT COALESCE(dispatched_at, accepted_at, sent_at) AS at FROM deliveries "
               "WHERE run_id = :run AND COALESCE(dispatched_at, accepted_at, sent_at) "
               "IS NOT NULL")  # fmt: skip
    for chunk in pd.read_sql(sql, conn, params={"run": run_id}, chunksize=CHUNK_ROWS * 5):
        yield chunk["at"]


def error_groups(conn: Connection, run_ids: Sequence[int]) -> pd.DataFrame:
    """Errors grouped by run, state and message: count, first and last time, one number."""
    states = ", ".join(f"'{s}'" for s in ERROR_STATES)
    message = "COALESCE(last_error, reason, '')"
    when = "COALESCE(failed_at, updated_at, dispatched_at)"
    sql = (f"SELECT run_id, state, {message} AS message, COUNT(*) AS n, MIN({when}) AS first_at,"
           f' MAX({when}) AS last_at, MIN("to") AS example FROM deliveries '
           f"WHERE run_id IN :ids AND (state IN ({states}) OR last_error IS NOT NULL) "
           f"GROUP BY run_id, state, {message} ORDER BY run_id, COUNT(*) DESC")  # fmt: skip
    return pd.read_sql(_ids(sql), conn, params={"ids": list(run_ids)})


def skip_reasons(conn: Connection, run_ids: Sequence[int]) -> pd.DataFrame:
    """Skipped rows by run and reason (``run_id, reason, n``)."""
    sql = ("SELECT run_id, COALESCE(reason, '') AS reason, COUNT(*) AS n FROM deliveries "
           "WHERE run_id IN :ids AND state = 'skipped' GROUP BY run_id, COALESCE(reason, '')")
    return pd.read_sql(_ids(sql), conn, params={"ids": list(run_ids)})


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

_DELIVERY_SQL = (
    'SELECT id, run_id, "row", step, kind, "to", state, reason, sender, attempts, last_error,'
    f" message_id, {', '.join(_TIME_COLUMNS)}, reply_text, variables, details "
    "FROM deliveries WHERE run_id = :run ORDER BY id"
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

_OPTOUT_FROM = (
    'FROM (SELECT DISTINCT run_id, "to" FROM deliveries WHERE run_id IN :ids) t '
    'JOIN suppressions s ON s.number = t."to"'
)
_OPTOUT_SQL = (
    "SELECT t.run_id, s.number, s.created_at, s.source, s.reason, "
    "(SELECT r.text FROM replies r WHERE r.number = s.number AND r.opt_out = :yes "
    " ORDER BY r.id DESC LIMIT 1) AS reply_text "
    f"{_OPTOUT_FROM} ORDER BY t.run_id, s.created_at, s.number"
)


def count_deliveries(conn: Connection, run_ids: Sequence[int]) -> int:
    """Rows of the Recipients table."""
    sql = _ids("SELECT COUNT(*) FROM deliveries WHERE run_id IN :ids")
    return int(conn.execute(sql, {"ids": list(run_ids)}).scalar() or 0)


def delivery_chunks(conn: Connection, run_id: int, chunk_rows: int = CHUNK_ROWS
                    ) -> Iterator[pd.DataFrame]:  # fmt: skip
    """The run's deliveries in plan order, ``chunk_rows`` at a time (raw text columns)."""
    yield from pd.read_sql(text(_DELIVERY_SQL), conn, params={"run": run_id},
                           chunksize=chunk_rows)  # fmt: skip


def count_replies(conn: Connection, run_ids: Sequence[int]) -> int:
    """Rows of the Replies table."""
    sql = _ids(f"SELECT COUNT(*) {_REPLY_FROM}")
    return int(conn.execute(sql, {"ids": list(run_ids)}).scalar() or 0)


def reply_chunks(conn: Connection, run_ids: Sequence[int], chunk_rows: int = CHUNK_ROWS
                 ) -> Iterator[pd.DataFrame]:  # fmt: skip
    """Replies to these runs, oldest first, with the replying recipient's CSV columns."""
    yield from pd.read_sql(_ids(_REPLY_SQL), conn, params={"ids": list(run_ids)},
                           chunksize=chunk_rows)  # fmt: skip


def count_optouts(conn: Connection, run_ids: Sequence[int]) -> int:
    """Rows of the Opt-outs table."""
    sql = _ids(f"SELECT COUNT(*) {_OPTOUT_FROM}")
    return int(conn.execute(sql, {"ids": list(run_ids)}).scalar() or 0)


def optout_chunks(conn: Connection, run_ids: Sequence[int], chunk_rows: int = CHUNK_ROWS
                  ) -> Iterator[pd.DataFrame]:  # fmt: skip
    """Recipients of these runs on the suppression list, with their opt-out message."""
    yield from pd.read_sql(_ids(_OPTOUT_SQL), conn, params={"ids": list(run_ids), "yes": True},
                           chunksize=chunk_rows)  # fmt: skip


def optout_times(conn: Connection, run_ids: Sequence[int]) -> pd.DataFrame:
    """``run_id, created_at`` of every suppression of these runs' recipients (for counts)."""
    sql = f"SELECT t.run_id, s.created_at {_OPTOUT_FROM}"
    return pd.read_sql(_ids(sql), conn, params={"ids": list(run_ids)})
