"""The ledger as tracking's store: the receiver's transactions, a batch's reads and writes.

:class:`TrackingStore` is the ledger's implementation of
:class:`scheduler.tracking.store.TrackingStore`, and :class:`TrackingBatch` (one
transaction's connection) of the roles a batch plays (``BatchStore``: the stored events,
the deliveries they move, replies, labels). Each method is one query module's call.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

from scheduler.ledger import access, outbox
from scheduler.ledger.access import Connection
from scheduler.ledger.queries import ambiguous as aq
from scheduler.ledger.queries import answers as answers_q
from scheduler.ledger.queries import call_events as callq
from scheduler.ledger.queries import common as cq
from scheduler.ledger.queries import conversation as convq
from scheduler.ledger.queries import events as eq
from scheduler.ledger.queries import labels as lq
from scheduler.ledger.queries import suppression as sq
from scheduler.ledger.queries import tracking as tq
from scheduler.ledger.queries import uptime as uq
from scheduler.ledger.rows import LatestDelivery, StoredEvent, UnmatchedEvent
from scheduler.ledger.runs import Ledger


class TrackingBatch:
    """One transaction (or read) of the receiver, by the roles a batch plays."""

    __slots__ = ("conn",)

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    # the stored events
    def insert_events(self, rows: Sequence[dict[str, Any]]) -> dict[str, int]:
        return eq.insert_events(self.conn, rows)

    def mark_applied(self, results: Sequence[tuple[int, str]], now: datetime) -> None:
        eq.mark_events_applied(self.conn, results, now)

    def note_result(self, event_id: int, result: str) -> None:
        eq.note_event_result(self.conn, event_id, result)

    def payloads(self, ids: Sequence[int]) -> list[StoredEvent]:
        return eq.event_payloads(self.conn, ids)

    def unapplied(self, after_id: int, limit: int) -> list[StoredEvent]:
        return eq.unapplied_events(self.conn, after_id=after_id, limit=limit)

    def recent_unmatched(self, window: int, names: Sequence[str]) -> list[UnmatchedEvent]:
        since = max(eq.max_event_id(self.conn) - window, 0)
        return eq.recent_unmatched_events(self.conn, since_id=since, names=names)

    def unmatched_for(self, norms: Iterable[str], names: Sequence[str]) -> list[StoredEvent]:
        return eq.unmatched_events_for(self.conn, norms, names)

    def payloads_about(self, norm: str, names: Sequence[str]) -> list[StoredEvent]:
        return eq.stored_event_payloads_for(self.conn, norm, names)

    def events_by_keys(self, keys: Sequence[str]) -> dict[str, tuple[str, str]]:
        return callq.events_by_keys(self.conn, keys)

    def savepoint(self) -> AbstractContextManager[Any]:
        return access.savepoint(self.conn)  # type: ignore[no-any-return]

    # the deliveries events move
    def held_message_ids(self, norms: Iterable[str]) -> set[str]:
        return tq.held_message_ids(self.conn, norms)

    def track_progress(self, target: str, params: Sequence[tuple[str, datetime]],
                       now: datetime, *, stamps: Sequence[str]) -> None:
        tq.track_progress(self.conn, target, params, now, stamps=stamps)

    def ambiguous_row_for(self, number: str, sender: str | None, latest_dispatch: datetime,
                          *, kinds: Sequence[str] = (), strict_kinds: Sequence[str] = (),
                          only_kinds: Sequence[str] = ()) -> int | None:
        return aq.ambiguous_row_for(self.conn, number, sender, latest_dispatch, kinds=kinds,
                                    strict_kinds=strict_kinds, only_kinds=only_kinds)

    def mark_proven_sent(self, delivery_id: int, norm: str, at: datetime | None,
                         now: datetime) -> bool:
        return aq.mark_proven_sent(self.conn, delivery_id, norm, at, now)

    def merge_details(self, norm: str, extra: dict[str, Any]) -> None:
        tq.merge_details(self.conn, norm, extra)

    def latest_delivery_to(self, number: str, session_id: str | None,
                           before: datetime) -> LatestDelivery | None:
        return tq.latest_delivery_to(self.conn, number, session_id, before)

    def delivery_answered(self, norm: str, number: str | None) -> LatestDelivery | None:
        return tq.delivery_answered(self.conn, norm, number)

    # replies, answers, opt-outs, late notes
    def record_reply(self, reply: dict[str, Any], now: datetime) -> None:
        tq.record_reply(self.conn, reply, now)
        outbox.reply_stored(self.conn, run_id=reply["run_id"], delivery_id=reply["delivery_id"],
                            number=reply["number"], kind=reply["kind"],
                            opted_out=reply["opt_out"], received_at=reply["received_at"],
                            now=now)

    def record_answer(self, delivery_id: int, answer: dict[str, Any], at: datetime) -> bool:
        return answers_q.record_answer(self.conn, delivery_id, answer, at)

    def add_suppression(self, number: str, *, source: str, reason: str | None,
                        now: datetime) -> bool:
        return sq.add_suppression(self.conn, number, source=source, reason=reason, now=now)

    def voice_calls_of(self, norm: str) -> list[tuple[str, int, str, str]]:
        return sq.voice_calls_of(self.conn, norm)

    def decided_on(self, delivery_id: int) -> list[tuple[int, str, datetime]]:
        return convq.decided_on(self.conn, delivery_id)

    def note_late(self, notes: Sequence[tuple[int, datetime, str]]) -> None:
        convq.note_late(self.conn, notes)

    # labels
    def upsert_label(self, row: dict[str, Any]) -> None:
        lq.upsert_label(self.conn, row)

    def upsert_label_chat(self, row: dict[str, Any]) -> None:
        lq.upsert_chat(self.conn, row)

    def upsert_label_message(self, row: dict[str, Any]) -> None:
        lq.upsert_message(self.conn, row)


class TrackingStore:
    """The ledger as the receiver's store (see the module)."""

    def __init__(self, ledger: Ledger) -> None:
        self.engine = ledger.engine

    @contextmanager
    def batch(self, what: str) -> Iterator[TrackingBatch]:
        with access.transaction(self.engine, what) as conn:
            cq.lock_matching(conn)
            yield TrackingBatch(conn)

    @contextmanager
    def reading(self, what: str) -> Iterator[TrackingBatch]:
        with access.read(self.engine, what) as conn:
            yield TrackingBatch(conn)

    def record_uptime(self, uptime_id: int | None, pid: int, url_key: str, now: datetime,
                      *, stopping: bool = False) -> int:
        with access.transaction(self.engine, "record the receiver's uptime") as conn:
            if uptime_id is None:
                return uq.open_uptime(conn, pid, url_key, now) if not stopping else 0
            if stopping:
                uq.stop_uptime(conn, uptime_id, now)
            else:
                uq.touch_uptime(conn, uptime_id, now)
            return uptime_id


__all__ = ["TrackingBatch", "TrackingStore"]
