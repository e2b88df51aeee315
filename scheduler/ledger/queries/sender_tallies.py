"""Per-(run, sender) tallies kept by database triggers: what ``campaign status --json``
shows for each sender of a run (sent, failed, unknown, replied to) without scanning the
run's rows.

Why: those figures were a ``GROUP BY`` over the run's rows that went through a sender
(about 1.9 s of ``status --json`` on a 1,000,000-row run, issue 32). ``run_sender_tallies``
keeps one counter per (run, sender, ``grp``, ``replied``, shard), moved by triggers on
``deliveries`` in the same transaction as the change, exactly as :mod:`tallies` keeps the
per-run counters (read its docstring: the same mechanism, the same reasons):

- a row is counted while it went through a sender and is past the plan: ``sender`` not
  NULL nor ``''`` and ``state`` not ``planned`` (a later step waiting for its turn keeps
  its recipient's sender while planned; a retry goes back to ``planned``);
- ``grp`` is the status group ``status`` shows: ``sent`` (:data:`SENT_STATES`: the
  service took it), ``failed``, ``unknown`` or ``other`` (dispatching, expired, skipped,
  cancelled, …: counted in no figure, but the sender is listed with its zeros, as the
  ``GROUP BY`` listed it); a row that moves within a group (sent → delivered → read)
  moves no counter, so the receiver's receipts cost SQLite's triggers one comparison;
- ``replied`` is 1 when ``replied_at`` is set.

SQLite: row triggers (``WHEN`` compares the counted key only); the plan's bulk insert
drops the INSERT trigger with the others and counts its new rows once
(:func:`tallies.count_bulk_insert`, which skips the count when the insert writes no
sender, as the plan's does). PostgreSQL: statement-level triggers with transition
tables, ``shard`` the writing backend's pid. The groups are written into the triggers
from :data:`SENT_STATES` when the migration runs: a change to that set needs a migration
that drops and creates them again (:func:`drop_statements`, :func:`create_statements`)
and re-counts (:func:`backfill_statements`). A later migration that rebuilds
``deliveries`` on SQLite (batch mode) must create the triggers again.

Opt-outs (a reply that opted out, per delivery) are not kept here: they are read from
the replies that opted out (:func:`scheduler.ledger.queries.run_senders.run_sender_counts`),
a few per thousand sends.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, text

from scheduler.ledger.states import SENT_STATES
from scheduler.ledger.states import DeliveryState as S

#: The counter's key (besides the shard).
KEY = ("run_id", "sender", "grp", "replied")

_SENT_LIST = ", ".join(f"'{s}'" for s in sorted(str(s) for s in SENT_STATES))


def counted(row: str) -> str:
    """SQL, 1 or 0: whether ``row`` (``NEW``, ``OLD``, an alias) is counted."""
    return (f"(CASE WHEN {row}.sender <> '' AND {row}.state <> '{S.PLANNED}' "
            "THEN 1 ELSE 0 END)")


def _group(row: str) -> str:
    return (f"(CASE WHEN {row}.state IN ({_SENT_LIST}) THEN 'sent' "
            f"WHEN {row}.state = '{S.FAILED}' THEN 'failed' "
            f"WHEN {row}.state = '{S.UNKNOWN}' THEN 'unknown' ELSE 'other' END)")


def _replied(row: str) -> str:
    return f"(CASE WHEN {row}.replied_at IS NOT NULL THEN 1 ELSE 0 END)"


def _columns(row: str) -> str:
    return f"{row}.run_id, {row}.sender, {_group(row)}, {_replied(row)}"


_INSERT = "INSERT INTO run_sender_tallies (run_id, sender, grp, replied, shard, n) "
_UPSERT = (" ON CONFLICT (run_id, sender, grp, replied, shard)"
           " DO UPDATE SET n = run_sender_tallies.n + excluded.n")

# ---------------------------------------------------------------------- SQLite triggers


def _sqlite_change(row: str, delta: int) -> str:
    # INSERT ... SELECT needs a WHERE before ON CONFLICT (SQLite's parsing rule)
    return (f"{_INSERT}SELECT {_columns(row)}, 0, {delta} WHERE {counted(row)} = 1"
            f"{_UPSERT};")


def _sqlite_triggers() -> list[str]:
    moved = " OR ".join([
        f"{counted('OLD')} <> {counted('NEW')}",
        "OLD.run_id IS NOT NEW.run_id", "OLD.sender IS NOT NEW.sender",
        f"{_group('OLD')} <> {_group('NEW')}", f"{_replied('OLD')} <> {_replied('NEW')}"])
    either = f"({counted('OLD')} = 1 OR {counted('NEW')} = 1)"
    return [
        f"CREATE TRIGGER run_sender_tallies_insert AFTER INSERT ON deliveries "
        f"WHEN {counted('NEW')} = 1 BEGIN {_sqlite_change('NEW', 1)} END",
        f"CREATE TRIGGER run_sender_tallies_delete AFTER DELETE ON deliveries "
        f"WHEN {counted('OLD')} = 1 BEGIN {_sqlite_change('OLD', -1)} END",
        f"CREATE TRIGGER run_sender_tallies_update AFTER UPDATE ON deliveries "
        f"WHEN {either} AND ({moved}) "
        f"BEGIN {_sqlite_change('OLD', -1)} {_sqlite_change('NEW', 1)} END",
    ]


# ---------------------------------------------------------------------- PostgreSQL triggers

_PG_TRIGGERS = {
    # name: (event, REFERENCING clause, transition tables with their sign)
    "insert": ("INSERT", "NEW TABLE AS new_rows", [("new_rows", 1)]),
    "update": ("UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows",
               [("old_rows", -1), ("new_rows", 1)]),
    "delete": ("DELETE", "OLD TABLE AS old_rows", [("old_rows", -1)]),
}


def pg_triggers(prefix: str, body: Callable[[list[tuple[str, int]]], str]) -> list[str]:
    """PostgreSQL's statement-level triggers ``<prefix>_insert``, ``_update`` and
    ``_delete`` on ``deliveries``, each with its function of the same name running ``body``
    of its transition tables (with their sign); here and in :mod:`tallies`."""
    out = []
    for name, (event, referencing, sources) in _PG_TRIGGERS.items():
        out.append(f"CREATE FUNCTION {prefix}_{name}() RETURNS trigger "
                   f"LANGUAGE plpgsql AS $$ BEGIN {body(sources)}; RETURN NULL; END $$")
        out.append(f"CREATE TRIGGER {prefix}_{name} AFTER {event} ON deliveries "
                   f"REFERENCING {referencing} FOR EACH STATEMENT "
                   f"EXECUTE FUNCTION {prefix}_{name}()")
    return out


def pg_drops(prefix: str) -> list[str]:
    """Undo :func:`pg_triggers`."""
    return [statement for name in _PG_TRIGGERS for statement in (
        f"DROP TRIGGER IF EXISTS {prefix}_{name} ON deliveries",
        f"DROP FUNCTION IF EXISTS {prefix}_{name}()")]


def _pg_change(sources: list[tuple[str, int]]) -> str:
    """One grouped upsert per statement: ``sources`` are (transition table, sign)."""
    rows = " UNION ALL ".join(
        f"SELECT {_columns('t')}, {sign} AS d FROM {table} t WHERE {counted('t')} = 1"
        for table, sign in sources)
    return (f"{_INSERT}SELECT k1, k2, k3, k4, pg_backend_pid(), SUM(d) "
            f"FROM ({rows}) u(k1, k2, k3, k4, d) "
            "GROUP BY k1, k2, k3, k4 HAVING SUM(d) <> 0" + _UPSERT)


# ---------------------------------------------------------------------- DDL (the migration)


def create_statements(dialect: str) -> list[str]:
    """The triggers (and PostgreSQL's trigger functions) that keep the counters."""
    if dialect == "sqlite":
        return _sqlite_triggers()
    return pg_triggers("run_sender_tallies", _pg_change)


def drop_statements(dialect: str) -> list[str]:
    """Undo :func:`create_statements`."""
    if dialect == "sqlite":
        return [f"DROP TRIGGER IF EXISTS run_sender_tallies_{name}" for name in _PG_TRIGGERS]
    return pg_drops("run_sender_tallies")


def backfill_statements(dialect: str) -> list[str]:
    """Count the rows already stored (one ``GROUP BY``, shard 0)."""
    del dialect  # the same text on both
    return [f"{_INSERT}SELECT {_columns('d')}, 0, COUNT(*) FROM deliveries d "
            f"WHERE {counted('d')} = 1 GROUP BY 1, 2, 3, 4"]


# ---------------------------------------------------------------------- SQLite bulk insert

#: The INSERT trigger :func:`tallies.count_bulk_insert` drops and puts back.
INSERT_TRIGGER = "run_sender_tallies_insert"
#: Counts the rows of a bulk insert (``d.run_id + 0 = :run AND d.id > :before``, as
#: :func:`tallies.count_bulk_insert` binds them) the dropped trigger did not count.
COUNT_NEW = text(f"{_INSERT}SELECT {_columns('d')}, 0, COUNT(*) FROM deliveries d "
                 f"WHERE d.run_id + 0 = :run AND d.id > :before AND {counted('d')} = 1 "
                 "GROUP BY 1, 2, 3, 4" + _UPSERT)

# ---------------------------------------------------------------------- reading


def read(conn: Connection, run_ids: list[int]) -> dict[tuple[int, str], dict[str, int]]:
    """``{(run, sender): {"sent", "failed", "unknown", "replies": n}}`` for every (run,
    sender) with a counted row (summed over shards; one indexed read of a few rows)."""
    if not run_ids:
        return {}
    found = conn.execute(
        text("SELECT run_id, sender, grp, replied, SUM(n) FROM run_sender_tallies "
             f"WHERE run_id IN ({', '.join(str(int(r)) for r in sorted(set(run_ids)))}) "
             "GROUP BY run_id, sender, grp, replied HAVING SUM(n) <> 0")).all()
    out: dict[tuple[int, str], dict[str, int]] = {}
    for run_id, sender, grp, replied, n in found:
        counts = out.setdefault((int(run_id), str(sender)),
                                {"sent": 0, "failed": 0, "unknown": 0, "replies": 0})
        if grp in counts:
            counts[grp] += int(n)
        if replied:
            counts["replies"] += int(n)
    return out


__all__ = ["COUNT_NEW", "INSERT_TRIGGER", "KEY", "backfill_statements", "counted",
           "create_statements", "drop_statements", "pg_drops", "pg_triggers", "read"]
