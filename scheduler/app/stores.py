"""The engine's stores, wired: the ledger as a run's store, with tracking's hook.

The dispatcher sees a :class:`~scheduler.dispatch.store.Store` and never imports the
tracking layer; here, one floor above both, the ledger's store is given the hook that
applies the webhook events which arrived before their send's message id was stored
(:func:`scheduler.tracking.early.match_early_events`), in the same transaction.
"""

from __future__ import annotations

from scheduler.dispatch.store import StoreFor
from scheduler.ledger.run_store import RunStore
from scheduler.ledger.runs import Ledger
from scheduler.tracking.early import match_early_events


def run_store(ledger: Ledger, run_id: int) -> RunStore:
    """Run ``run_id``'s store in ``ledger``, applying early events as sends are recorded."""
    return RunStore(ledger, run_id, on_accepted=match_early_events)


def store_for(ledger: Ledger) -> StoreFor:
    """Any run's store in ``ledger`` (a ``serve`` worker settles runs it does not send)."""
    return lambda run_id: run_store(ledger, run_id)


__all__ = ["run_store", "store_for"]
