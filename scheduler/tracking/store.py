"""Store events and apply them, one transaction per batch (the receiver's only writes).

:func:`store_and_apply` inserts the raw events (a ``dedupe_key`` already stored is a no-op),
then applies the new ones in the same transaction: when it commits, the event is both
durable and applied. If anything fails (a bug, a bad row), the transaction is rolled back
and the batch is stored again with each event applied alone in a savepoint; one that still
fails stays stored with ``applied_at`` NULL and its error as ``result``, to be applied
again by :func:`apply_unapplied` at the next start. Database errors (SQLAlchemy's, and the
driver's on the SQLite fast path) are translated to
:class:`~scheduler.ledger.exceptions.LedgerError`."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from scheduler.ledger import queries
from scheduler.ledger.exceptions import LedgerError
from scheduler.tracking.apply import MATCHED_BY_ID, Applied, ApplyContext, apply_batch
from scheduler.tracking.intake import Incoming, incoming_from_payload

logger = logging.getLogger("scheduler.tracking")
#: Errors of the database: SQLAlchemy's, and the driver's own on the SQLite fast path.
DB_ERRORS = (SQLAlchemyError, sqlite3.Error)
T = TypeVar("T")


@dataclass
class Ingested:
    """Outcome of one batch: per event its stored id and whether it was a repeat."""

    ids: list[int | None] = field(default_factory=list)
    duplicate: list[bool] = field(default_factory=list)
    applied: Applied = field(default_factory=Applied)


def _apply(conn: Connection, batch: list[tuple[int, Incoming]], ctx: ApplyContext,
           now: datetime, *, careful: bool) -> tuple[Applied, dict[int, str]]:
    """Apply a batch; ``careful``: event by event in savepoints. Returns (applied, errors)."""
    if not careful:
        return apply_batch(conn, batch, ctx, now), {}
    applied, errors = Applied(), {}
    for event_id, item in batch:
        try:
            with conn.begin_nested():
                applied.merge(apply_batch(conn, [(event_id, item)], ctx, now))
        except Exception as exc:
            logger.exception("event %s (%s) could not be applied", event_id, item.name)
            errors[event_id] = f"error: {type(exc).__name__}: {exc}"[:500]
    return applied, errors


def _finish(conn: Connection, applied: Applied, errors: dict[int, str],
            now: datetime) -> None:
    queries.mark_events_applied(conn, sorted(applied.results.items()), now)
    for event_id, why in errors.items():
        queries.note_event_result(conn, event_id, why)


def _twice(attempt: Callable[[bool], T], what: str) -> T:
    """``attempt(careful=False)``; if anything fails, all is rolled back and it is tried
    again carefully (one event per savepoint). Database errors become ``LedgerError``."""
    try:
        try:
            return attempt(False)
        except Exception as exc:
            logger.warning("%s failed (%s: %s); trying again event by event", what,
                           type(exc).__name__, exc)
            return attempt(True)
    except DB_ERRORS as exc:
        raise LedgerError(f"could not {what}: {type(exc).__name__}: "
                          f"{getattr(exc, 'orig', exc)}") from None


def store_and_apply(engine: Engine, items: Sequence[Incoming], ctx: ApplyContext,
                    now: datetime) -> Ingested:
    """Store ``items`` and apply the new ones, all in one transaction (one commit)."""
    rows: dict[str, dict] = {}
    for item in items:
        rows.setdefault(item.dedupe_key, item.row())

    def attempt(careful: bool) -> Ingested:
        out = Ingested()
        with engine.begin() as conn:
            queries.lock_matching(conn)
            new = queries.insert_events(conn, list(rows.values()))
            fresh: list[tuple[int, Incoming]] = []
            for item in items:
                event_id = new.pop(item.dedupe_key, None)
                out.ids.append(event_id)
                out.duplicate.append(event_id is None)
                if event_id is not None:
                    fresh.append((event_id, item))
            if fresh:
                applied, errors = _apply(conn, fresh, ctx, now, careful=careful)
                _finish(conn, applied, errors, now)
                out.applied = applied
        return out

    return _twice(attempt, "store events")


def _load(conn: Connection, rows: list[tuple[int, str]], now: datetime
          ) -> tuple[list[tuple[int, Incoming]], dict[int, str]]:
    loaded: list[tuple[int, Incoming]] = []
    broken: dict[int, str] = {}
    for event_id, payload in rows:
        try:
            loaded.append((event_id, incoming_from_payload(payload, now)))
        except Exception as exc:
            broken[event_id] = f"error: stored payload does not parse: {exc}"[:500]
    return loaded, broken


def reapply(engine: Engine, event_ids: Sequence[int], ctx: ApplyContext,
            now: datetime) -> Applied:
    """Apply stored events again (late matches, recovery); their results are updated."""

    def attempt(careful: bool) -> Applied:
        with engine.begin() as conn:
            queries.lock_matching(conn)
            loaded, broken = _load(conn, queries.event_payloads(conn, list(event_ids)), now)
            applied, errors = _apply(conn, loaded, ctx, now, careful=careful)
            _finish(conn, applied, errors | broken, now)
            return applied

    return _twice(attempt, "apply stored events")


def apply_unapplied(engine: Engine, ctx: ApplyContext, now: datetime, *,
                    batch: int = 500) -> tuple[int, Applied]:
    """At start-up: apply every stored event whose ``applied_at`` is NULL (oldest first)."""
    total, after, everything = 0, 0, Applied()
    while True:
        with engine.connect() as conn:
            rows = queries.unapplied_events(conn, after_id=after, limit=batch)
        if not rows:
            return total, everything
        after = rows[-1][0]
        everything.merge(reapply(engine, [i for i, _ in rows], ctx, now))
        total += len(rows)


def pending_unmatched(engine: Engine, *, window: int = 100_000) -> list[tuple[int, str]]:
    """Unmatched sends and receipts among the last ``window`` events, to retry after a
    restart (a ``messages.sent`` left unmatched by an older version included)."""
    try:
        with engine.connect() as conn:
            newest = queries.max_event_id(conn)
            return queries.recent_unmatched_events(conn, since_id=max(newest - window, 0),
                                                   names=("messages.sent", *MATCHED_BY_ID))
    except DB_ERRORS as exc:
        raise LedgerError(f"could not read stored events: {exc}") from None


def now_matched(engine: Engine, norms: Sequence[str]) -> set[str]:
    """Which of these message ids a delivery holds now."""
    try:
        with engine.connect() as conn:
            return queries.held_message_ids(conn, norms)
    except DB_ERRORS as exc:
        raise LedgerError(f"could not read deliveries: {exc}") from None


def note_result(engine: Engine, event_id: int, result: str) -> None:
    """Replace an event's result (after its call was rejected, or not)."""
    try:
        with engine.begin() as conn:
            queries.note_event_result(conn, event_id, result)
    except DB_ERRORS as exc:
        raise LedgerError(f"could not note the result of event {event_id}: {exc}") from None
