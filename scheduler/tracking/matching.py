"""One way to match a stored event to its delivery: by message id, once a delivery holds it.

An event about a send (its proof, a receipt, an SMS report, a call's step) names the message
id the service answered. The service often posts it before the dispatcher has stored that
id on the delivery (or before a row in doubt was proven sent): the event is then stored
``unmatched``. One rule applies such events: **a stored event that matched no delivery is
applied once a delivery holds its message id** (:func:`match_stored`, in the caller's
transaction; :func:`match_events` after a commit). Whoever made deliveries hold ids calls it:

- the dispatcher, after the transaction that recorded accepted sends commits, and after
  rows in doubt were proven sent (through ``RunStores.match_events``, given by the wiring:
  the engine never imports tracking, the ledger never calls it);
- tracking itself, when a proof proved an ambiguous row sent (:func:`apply_and_match`);
- the receiver, for the unmatched events it keeps (its sweep) and those found at start-up.

No event is lost between the dispatcher's commit and the match: the receiver and the
dispatcher's accept both take the matching lock first (``lock_matching``), so an event
stored before the commit is visible to the match that follows it, and one stored after it
finds the id held. A crash between the two leaves the event ``unmatched`` with its id held:
the receiver's start-up finds it. Applying is monotone, so an event matched twice changes
nothing the second time.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime

from scheduler.dispatch.channels import progress_events, proof_events
from scheduler.tracking.apply import Applied, ApplyContext, apply_batch
from scheduler.tracking.call_events import CALL_EVENTS
from scheduler.tracking.intake import Incoming
from scheduler.tracking.reload import load_stored
from scheduler.tracking.replies import OptOutWords
from scheduler.tracking.store import BatchStore, TrackingStore

#: The events matched to a delivery by message id (or call id) alone: each channel's
#: proof and progress, and a WhatsApp call's steps.
MATCHED_EVENTS = tuple(sorted({*proof_events(), *progress_events(), *CALL_EVENTS}))
#: Only proofs, receipts and call steps are matched here: no reply, so no opt-out word.
PLAIN = ApplyContext(OptOutWords(()))


def apply_and_match(book: BatchStore, batch: list[tuple[int, Incoming]], ctx: ApplyContext,
                    now: datetime) -> Applied:
    """Apply stored events (:func:`~scheduler.tracking.apply.apply_batch`), then match the
    events stored earlier about the message ids their proofs gave a delivery."""
    applied = apply_batch(book, batch, ctx, now)
    if applied.proved:
        applied.merge(match_stored(book, applied.proved, now, ctx=ctx,
                                   skip=[event_id for event_id, _item in batch]))
    return applied


def match_stored(book: BatchStore, norms: Iterable[str], now: datetime, *,
                 ctx: ApplyContext = PLAIN, held: bool = False,
                 skip: Collection[int] = ()) -> Applied:
    """In the caller's transaction: apply the stored, unmatched events about ``norms`` whose
    message id a delivery holds (``held``: the caller knows they all are); their ``result``
    is updated. ``skip``: events the caller applies itself."""
    wanted = {n.lower() for n in norms if n}  # as record_accepted stores them
    if wanted and not held:
        wanted = book.held_message_ids(wanted)
    if not wanted:
        return Applied()
    stored = [s for s in book.unmatched_for(wanted, MATCHED_EVENTS) if s.id not in skip]
    if not stored:
        return Applied()
    loaded, _ = load_stored(book, stored, now)  # one that no longer parses: said, left
    applied = apply_and_match(book, loaded, ctx, now)
    book.mark_applied(sorted(applied.results.items()), now)
    return applied


def match_events(store: TrackingStore, norms: Collection[str], now: datetime, *,
                 ctx: ApplyContext = PLAIN, held: bool = False
                 ) -> tuple[set[str], Applied]:
    """:func:`match_stored` after the caller's commit: a read first (usually nothing waits),
    then, only when events wait, one transaction holding the matching lock. The message ids
    of ``norms`` a delivery holds (``held``: the caller knows they all are), and what was
    applied."""
    wanted = {n.lower() for n in norms if n}  # as record_accepted stores them
    if not wanted:
        return set(), Applied()
    with store.reading("look for events stored before their send") as book:
        if not held:
            wanted = book.held_message_ids(wanted)
        if not wanted or not book.unmatched_for(wanted, MATCHED_EVENTS):
            return wanted, Applied()
    with store.batch("apply the events stored before their send") as book:
        return wanted, match_stored(book, wanted, now, ctx=ctx, held=True)


__all__ = ["MATCHED_EVENTS", "apply_and_match", "match_events", "match_stored"]
