"""A run's second chances counted per step and attempt number (issue 25), bounded.

Why this is hot: ``campaign status``, every page and live update of a run on the
dashboard show the funnel per attempt. A 1,000,000-row run's first attempts are never
scanned for it: the run's counters by step, state and marks come from its trigger-kept
tallies (:mod:`.tallies`), and the first attempts are those counters minus the attempt
rows (``first_id`` set: retries, read here grouped through the partial index of each
run's attempt rows, ``ix_deliveries_attempts``). Attempt rows are few next to first
attempts (the not reached ones of a step with retry rules, at most ``max_attempts - 1``
each). A fallback run holds attempt rows only: its own tallies count it
(no scan).

Rows awaiting a verdict (``watch`` set, settled past ``dispatching``) are counted through
the partial index ``ix_deliveries_watch``, at most ``cap`` of them: while a fallback's
``after`` runs, every first attempt of step 1 is watched.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, text

from scheduler.ledger.models import WATCHED
from scheduler.ledger.queries import tallies

#: States of a row not sent yet (nor being sent): nothing to judge.
UNSENT = ("planned", "dispatching", "held")
#: The rows awaiting a verdict: ``ix_deliveries_watch``'s predicate (``models.WATCHED``),
#: spelt the same (a partial index serves a query whose WHERE says it, word for word).
WATCHED_D = "d.watch IS NOT NULL AND d.state NOT IN ('planned', 'dispatching', 'held')"
assert WATCHED_D.replace("d.", "") == WATCHED


@dataclass(frozen=True, slots=True)
class AttemptRows:
    """Attempt rows of one run (``first_id`` set) of one step, attempt number, rule, state
    and ``marks`` (:data:`.run_rows.MARKS`): how many, the earliest ``due_at`` of the planned
    ones, how many await a verdict."""

    step: int
    attempt: int
    rule: str | None
    state: str
    marks: int
    n: int
    next_due: datetime | None
    awaiting: int


@dataclass(frozen=True, slots=True)
class FamilyIds:
    """A run's family: the parent (the run with the first attempts) and its fallback run."""

    parent: int
    fallback: int | None


def _aware(moment: Any) -> datetime | None:
    if moment is None:
        return None
    found: datetime = (datetime.fromisoformat(moment) if isinstance(moment, str)
                       else moment)  # SQLite: text, UTC
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


# The run's attempt rows, grouped. They are read through the partial index
# ix_deliveries_attempts (run_id) WHERE first_id IS NOT NULL, which holds attempt rows only,
# by run (not other runs' retries): SQLite would take the claim index (run_id, state, seq)
# for "run_id = ?" and read every first attempt of the run, hence INDEXED BY; PostgreSQL's
# planner weighs the two by their sizes. The marks are the tallies' own expression, so the
# funnel of these rows is computed exactly as the run's.
def _attempts_from(dialect: str) -> str:
    hint = " INDEXED BY ix_deliveries_attempts" if dialect == "sqlite" else ""
    return f"FROM deliveries d{hint} WHERE d.first_id IS NOT NULL AND d.run_id = :run"


def _attempt_rows_sql(dialect: str) -> Any:
    return text(
        f"SELECT d.step, d.attempt, d.rule, d.state, {tallies._marks('d')} AS marks,"
        " COUNT(*), MIN(CASE WHEN d.state = 'planned' THEN d.due_at END),"
        f" COUNT(CASE WHEN {WATCHED_D} THEN 1 END) {_attempts_from(dialect)}"
        " GROUP BY d.step, d.attempt, d.rule, d.state, marks")


def attempt_rows(conn: Connection, run_id: int) -> list[AttemptRows]:
    """The run's attempt rows grouped (a few dozen groups; as many rows read as the run
    has attempt rows)."""
    return [AttemptRows(int(step), int(attempt), rule, str(state), int(marks), int(n),
                        _aware(due), int(awaiting or 0))
            for step, attempt, rule, state, marks, n, due, awaiting
            in conn.execute(_attempt_rows_sql(conn.dialect.name), {"run": run_id})]


def _awaiting_sql(dialect: str) -> Any:
    # SQLite would take the claim index (run_id, state, seq) for "run_id = ?" and read
    # every row of the run: INDEXED BY keeps it on the watched rows only
    hint = " INDEXED BY ix_deliveries_watch" if dialect == "sqlite" else ""
    return text(f"SELECT COUNT(*) FROM (SELECT 1 FROM deliveries{hint} WHERE run_id = :run"
                f" AND {WATCHED} LIMIT :cap) w")


def awaiting_verdict(conn: Connection, run_id: int, cap: int) -> int:
    """Rows of the run sent and waiting for a verdict on their outcome, counted up to
    ``cap`` (the watched rows, through their partial index)."""
    return int(conn.execute(_awaiting_sql(conn.dialect.name),
                            {"run": run_id, "cap": cap}).scalar_one())


# the parent (the run itself unless it is a fallback run), then the parent's first
# fallback run: one round trip (a run's view reads it on every read)
_FAMILY = text(
    "SELECT f.root, (SELECT c.id FROM runs c WHERE c.parent_run_id = f.root ORDER BY c.id "
    "LIMIT 1) FROM (SELECT COALESCE((SELECT r.parent_run_id FROM runs r WHERE r.id = :run), "
    ":run) AS root) f")


def family(conn: Connection, run_id: int) -> FamilyIds:
    """Run ``run_id``'s parent (itself unless it is a fallback run) and fallback run."""
    root, child = conn.execute(_FAMILY, {"run": run_id}).one()
    return FamilyIds(int(root), int(child) if child is not None else None)


# ---------------------------------------------------------------------- the report

# The report's per-recipient "reached by": each chain's last attempt (the report reads
# every row anyway; here only the attempt rows, the few chains that had a second chance).
def _chain_ends_sql(dialect: str) -> Any:
    return text(f"SELECT d.first_id, d.run_id, d.attempt, d.state, {tallies._marks('d')}"
                f" {_attempts_from(dialect)}")


def chain_ends(conn: Connection, run_ids: list[int]) -> dict[int, tuple[int, int, str, int]]:
    """``{first attempt's id: (run, attempt, state, marks)}`` of the last attempt of every
    recipient (and step) that had more than one, over ``run_ids`` (a run and its
    fallback run)."""
    out: dict[int, tuple[int, int, str, int]] = {}
    for run_id in run_ids:
        for first_id, run, attempt, state, marks in conn.execute(_chain_ends_sql(conn.dialect.name),
                                                                {"run": run_id}):
            known = out.get(int(first_id))
            if known is None or int(attempt) > known[1]:
                out[int(first_id)] = (int(run), int(attempt), str(state), int(marks))
    return out


__all__ = ["UNSENT", "AttemptRows", "FamilyIds", "attempt_rows", "awaiting_verdict",
           "chain_ends", "family"]
