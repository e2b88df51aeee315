"""Builders of the sender tests: a run whose rows went out through senders at given times."""

from __future__ import annotations

from datetime import datetime

from scheduler.ledger import access
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import runs as rq
from scheduler.ledger.runs import Ledger
from tests.factories import make_run


def dispatched_run(ledger: Ledger, sends: list[tuple[str, datetime]], *,
                   planned: int = 0, name: str = "test") -> int:
    """A run naming the senders of ``sends`` whose rows were dispatched, one per
    ``(sender, time)``, plus ``planned`` rows still planned; its id."""
    senders = tuple(sorted({sender for sender, _at in sends})) or ("s1",)
    run_id = make_run(ledger, len(sends) + planned, senders=senders, name=name)
    with access.transaction(ledger.engine, "dispatch the test rows") as conn:
        ids = rq.planned_ids(conn, run_id)
        for row_id, (sender, at) in zip(ids, sends, strict=False):
            assert dq.claim(conn, [(row_id, sender)], at) == {row_id}
    return run_id
