"""What the demo reads back of its runs: each delivery's outcome, what each sender sent,
and a sender's history of states.

:class:`DemoReads` is the door of ``campaign demo``'s parts that print what became of
their runs (:mod:`scheduler.demo.channels`, :mod:`scheduler.demo.calls`,
:mod:`scheduler.demo.sender_health`). Each method is one read (a snapshot where it reads
twice).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, NamedTuple

from scheduler.ledger import access
from scheduler.ledger.access import Engine
from scheduler.ledger.queries import sender_health as shq
from scheduler.ledger.queries import sender_profiles as spq
from scheduler.ledger.queries.reports import delivery_chunks
from scheduler.ledger.rows import SenderChangeRow


class DeliveryOutcome(NamedTuple):
    """A delivery of a run as it ended: its number, sender, state and details."""

    to: str
    sender: str
    state: str
    details: dict[str, Any]


class DemoReads:
    """The demo runs of ``engine``'s ledger (see the module)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def outcomes(self, run_id: int) -> list[DeliveryOutcome]:
        """Each delivery of the run, in plan order (no sender: ``""``)."""
        out = []
        with access.snapshot(self.engine, "read the demo run's outcomes") as conn:
            for chunk in delivery_chunks(conn, run_id, 1000):
                for to, sender, state, details in zip(chunk["to"], chunk["sender"],
                                                      chunk["state"], chunk["details"],
                                                      strict=True):
                    out.append(DeliveryOutcome(str(to), str(sender or ""), str(state),
                                               json.loads(details) if details else {}))
        return out

    def history(self, sender: str) -> list[SenderChangeRow]:
        """The sender's latest state changes, newest first."""
        with access.read(self.engine, f"read sender {sender}'s history") as conn:
            return spq.history(conn, sender)

    def senders_story(self, run_id: int, sender: str, since: datetime
                      ) -> tuple[dict[str, int], list[SenderChangeRow]]:
        """What each sender of the run took (rows but skipped ones), and ``sender``'s
        state changes at or after ``since``, oldest first."""
        with access.snapshot(self.engine, "read the demo's senders") as conn:
            sends = {s: n for s, n in shq.sends_by_sender(conn, run_id).items() if s}
            changes = [c for c in reversed(spq.history(conn, sender)) if c.at >= since]
        return sends, changes


__all__ = ["DeliveryOutcome", "DemoReads"]
