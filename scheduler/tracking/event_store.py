"""Store events and apply them, one transaction per batch (the receiver's only writes).

:func:`store_and_apply` inserts the raw events (a ``dedupe_key`` already stored is a no-op),
then applies the new ones in the same transaction: when it commits, the event is both
durable and applied. If anything fails (a bug, a bad row), the transaction is rolled back
and the batch is stored again with each event applied alone in a savepoint; one that still
fails stays stored with ``applied_at`` NULL and its error as ``result``, to be applied
again by :func:`apply_unapplied` at the next start. Database errors (SQLAlchemy's, and the
driver's on the SQLite fast path) become :class:`~scheduler.ledger.exceptions.LedgerError`
in the ledger's scopes (:mod:`scheduler.ledger.access`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from scheduler.ledger.rows import UnmatchedEvent
from scheduler.tracking.apply import Applied, ApplyContext
from scheduler.tracking.intake import Incoming
from scheduler.tracking.matching import MATCHED_EVENTS, apply_and_match
from scheduler.tracking.reload import load_stored
from scheduler.tracking.store import BatchStore, TrackingStore

logger = logging.getLogger("scheduler.tracking")
T = TypeVar("T")


@dataclass
class Ingested:
    """Outcome of one batch: per event its stored id and whether it was a repeat."""

    ids: list[int | None] = field(default_factory=list)
    duplicate: list[bool] = field(default_factory=list)
    applied: Applied = field(default_factory=Applied)


def _apply(book: BatchStore, batch: list[tuple[int, Incoming]], ctx: ApplyContext,
           now: datetime, *, careful: bool) -> tuple[Applied, dict[int, str]]:
    """Apply a batch; ``careful``: event by event in savepoints. Returns (applied, errors)."""
    if not careful:
        return apply_and_match(book, batch, ctx, now), {}
    applied, errors = Applied(), {}
    for event_id, item in batch:
        try:
            with book.savepoint():
                applied.merge(apply_and_match(book, [(event_id, item)], ctx, now))
        except Exception as exc:
            logger.exception("event %s (%s) could not be applied", event_id, item.name)
            errors[event_id] = f"error: {type(exc).__name__}: {exc}"[:500]
    return applied, errors


def _finish(book: BatchStore, applied: Applied, errors: dict[int, str],
            now: datetime) -> None:
    book.mark_applied(sorted(applied.results.items()), now)
    for event_id, why in errors.items():
        book.note_result(event_id, why)


def _twice(attempt: Callable[[bool], T], what: str) -> T:
    """``attempt(careful=False)``; if anything fails, all is rolled back and it is tried
    again carefully (one event per savepoint); a second failure is raised (a database error
    as ``LedgerError``, by the attempt's scope)."""
    try:
        return attempt(False)
    except Exception as exc:
        logger.warning("%s failed (%s: %s); trying again event by event", what,
                       type(exc).__name__, exc)
        return attempt(True)


def store_and_apply(store: TrackingStore, items: Sequence[Incoming], ctx: ApplyContext,
                    now: datetime) -> Ingested:
    """Store ``items`` and apply the new ones, all in one transaction (one commit)."""
    rows: dict[str, dict] = {}
    for item in items:
        rows.setdefault(item.dedupe_key, item.row())

    def attempt(careful: bool) -> Ingested:
        out = Ingested()
        with store.batch("store events") as book:
            new = book.insert_events(list(rows.values()))
            fresh: list[tuple[int, Incoming]] = []
            for item in items:
                event_id = new.pop(item.dedupe_key, None)
                out.ids.append(event_id)
                out.duplicate.append(event_id is None)
                if event_id is not None:
                    fresh.append((event_id, item))
            if fresh:
                applied, errors = _apply(book, fresh, ctx, now, careful=careful)
                _finish(book, applied, errors, now)
                out.applied = applied
        return out

    return _twice(attempt, "store events")


def reapply(store: TrackingStore, event_ids: Sequence[int], ctx: ApplyContext,
            now: datetime) -> Applied:
    """Apply stored events again (recovery); their results are updated."""

    def attempt(careful: bool) -> Applied:
        with store.batch("apply stored events") as book:
            loaded, _ = load_stored(book, book.payloads(list(event_ids)), now)
            applied, errors = _apply(book, loaded, ctx, now, careful=careful)
            _finish(book, applied, errors, now)
            return applied

    return _twice(attempt, "apply stored events")


def apply_unapplied(store: TrackingStore, ctx: ApplyContext, now: datetime, *,
                    batch: int = 500) -> tuple[int, Applied]:
    """At start-up: apply every stored event whose ``applied_at`` is NULL (oldest first)."""
    total, after, everything = 0, 0, Applied()
    while True:
        with store.reading("read the events left unapplied") as book:
            rows = book.unapplied(after, batch)
        if not rows:
            return total, everything
        after = rows[-1].id
        everything.merge(reapply(store, [r.id for r in rows], ctx, now))
        total += len(rows)


def pending_unmatched(store: TrackingStore, *, window: int = 100_000
                      ) -> list[UnmatchedEvent]:
    """Unmatched sends and receipts among the last ``window`` events, to retry after a
    restart (a ``messages.sent`` left unmatched by an older version included)."""
    with store.reading("read stored events") as book:
        return book.recent_unmatched(window, MATCHED_EVENTS)


def note_result(store: TrackingStore, event_id: int, result: str) -> None:
    """Replace an event's result (after its call was rejected, or not)."""
    with store.batch(f"note the result of event {event_id}") as book:
        book.note_result(event_id, result)
