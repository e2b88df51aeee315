"""What tracking needs of the ledger, by role: the receiver's door and a batch's work.

The receiver holds a :class:`TrackingStore`: a batch's transaction (:meth:`TrackingStore.batch`,
the matching lock taken first), a read, its own uptime. Inside a batch the appliers of
events hold the roles they need: :class:`EventLogStore` (the stored events),
:class:`DeliveryTrackStore` (the deliveries events move), :class:`ReplyStore` (replies,
answers, opt-outs, the decisions a late reply is noted on) and :class:`LabelStore` (each
session's label state), all played by the one :class:`BatchStore` a batch hands out. The
ledger implements them (``ledger/tracking_store.py``) as it implements the dispatcher's
stores: tracking never opens a transaction nor calls a query module itself. Rows are the
ledger's plain rows (:mod:`scheduler.ledger.rows`); errors are
:class:`~scheduler.ledger.exceptions.LedgerError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from scheduler.ledger.rows import LatestDelivery, StoredEvent, UnmatchedEvent


class EventLogStore(Protocol):
    """The stored events: each stored once, applied, its result kept."""

    def insert_events(self, rows: Sequence[dict[str, Any]]) -> dict[str, int]:
        """Store new events (a ``dedupe_key`` already stored is skipped): key → new id."""

    def mark_applied(self, results: Sequence[tuple[int, str]], now: datetime) -> None:
        """Each (event id, result) applied at ``now``."""

    def note_result(self, event_id: int, result: str) -> None:
        """Replace an event's result (left unapplied)."""

    def payloads(self, ids: Sequence[int]) -> list[StoredEvent]:
        """The stored events ``ids``."""

    def unapplied(self, after_id: int, limit: int) -> list[StoredEvent]:
        """Events never applied (a crash, an error), oldest first."""

    def recent_unmatched(self, window: int, names: Sequence[str]) -> list[UnmatchedEvent]:
        """Events of ``names`` among the last ``window`` that matched no delivery yet."""

    def unmatched_for(self, norms: Iterable[str], names: Sequence[str]) -> list[StoredEvent]:
        """Events of ``names`` about these message ids stored unmatched, oldest first."""

    def payloads_about(self, norm: str, names: Sequence[str]) -> list[StoredEvent]:
        """Events of ``names`` about one message id, oldest first."""

    def events_by_keys(self, keys: Sequence[str]) -> dict[str, tuple[str, str]]:
        """Stored events by ``dedupe_key``: key → (name, payload)."""

    def savepoint(self) -> AbstractContextManager[Any]:
        """A nested transaction: an error inside rolls back only the block."""


class DeliveryTrackStore(Protocol):
    """The deliveries events move: by message id, or a row in doubt proven sent."""

    def held_message_ids(self, norms: Iterable[str]) -> set[str]:
        """Which of these message ids a delivery holds."""

    def track_progress(self, target: str, params: Sequence[tuple[str, datetime]],
                       now: datetime, *, stamps: Sequence[str]) -> None:
        """Move the deliveries holding each message id forward to ``target`` (never back),
        each time column of ``stamps`` keeping its earliest time."""

    def ambiguous_row_for(self, number: str, sender: str | None, latest_dispatch: datetime,
                          *, kinds: Sequence[str] = (), strict_kinds: Sequence[str] = (),
                          only_kinds: Sequence[str] = ()) -> int | None:
        """The oldest row in doubt to ``number`` that a proof could prove sent."""

    def mark_proven_sent(self, delivery_id: int, norm: str, at: datetime | None,
                         now: datetime) -> bool:
        """A row in doubt proven sent with message id ``norm``; whether it was."""

    def merge_details(self, norm: str, extra: dict[str, Any]) -> None:
        """Add ``extra`` to the details of the delivery holding ``norm``."""

    def latest_delivery_to(self, number: str, session_id: str | None,
                           before: datetime) -> LatestDelivery | None:
        """The last delivery dispatched to ``number`` up to ``before``."""

    def delivery_answered(self, norm: str, number: str | None) -> LatestDelivery | None:
        """The delivery holding the message a reply quotes (or answers)."""


class ReplyStore(Protocol):
    """What replies and pressed keys leave: the reply, its answer, opt-outs, late notes."""

    def record_reply(self, reply: dict[str, Any], now: datetime) -> None:
        """Store a reply, and the outgoing webhooks' events it makes."""

    def record_answer(self, delivery_id: int, answer: dict[str, Any], at: datetime) -> bool:
        """Keep a poll vote or list choice on its delivery unless it holds a later one."""

    def add_suppression(self, number: str, *, source: str, reason: str | None,
                        now: datetime) -> bool:
        """Put ``number`` on the suppression list; its pending deliveries are skipped."""

    def voice_calls_of(self, norm: str) -> list[tuple[str, int, str, str]]:
        """(number, run, campaign, definition) of the voice call holding ``norm``."""

    def decided_on(self, delivery_id: int) -> list[tuple[int, str, datetime]]:
        """The steps' decisions (id, outcome, when) that looked at a delivery."""

    def note_late(self, notes: Sequence[tuple[int, datetime, str]]) -> None:
        """Say on each decision that a reply came after it (the first is kept)."""


class LabelStore(Protocol):
    """Each session's label state: a fact kept only when it is the newest of its kind."""

    def upsert_label(self, row: dict[str, Any]) -> None:
        """A label's definition."""

    def upsert_label_chat(self, row: dict[str, Any]) -> None:
        """Whether a label is on a chat."""

    def upsert_label_message(self, row: dict[str, Any]) -> None:
        """Whether a label is on a message."""


class BatchStore(EventLogStore, DeliveryTrackStore, ReplyStore, LabelStore, Protocol):
    """Every role one batch's transaction plays (each applier takes the one it needs)."""


class TrackingStore(Protocol):
    """The receiver's door into the ledger."""

    def batch(self, what: str) -> AbstractContextManager[BatchStore]:
        """One transaction, the matching lock taken first (see ``lock_matching``)."""

    def reading(self, what: str) -> AbstractContextManager[BatchStore]:
        """A read; nothing is committed."""

    def record_uptime(self, uptime_id: int | None, pid: int, url_key: str, now: datetime,
                      *, stopping: bool = False) -> int:
        """That a receiver listens (a new interval when ``uptime_id`` is None) or, when
        ``stopping``, stops listening now; the interval's id (0: none was open)."""


__all__ = ["BatchStore", "DeliveryTrackStore", "EventLogStore", "LabelStore", "ReplyStore",
           "TrackingStore"]
