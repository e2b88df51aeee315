"""The senders as a store: profiles and states, sends, sessions and calls, across runs.

:class:`SenderStore` is the ledger's implementation of
:class:`scheduler.dispatch.store.SenderStore` (sender care, caps, the call limits); the
run is known for the calls in progress in it. Each method is one transaction or one read.
The functions after it, over an engine, serve the commands and a rehearsal: a change of
state by hand, a session's last status, the profiles a rehearsal copies.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import date, datetime

from scheduler.ledger import access
from scheduler.ledger.access import Engine
from scheduler.ledger.queries import sender_calls as scq
from scheduler.ledger.queries import sender_health as shq
from scheduler.ledger.queries import sender_profiles as spq
from scheduler.ledger.queries import sessions as sq
from scheduler.ledger.queries.sender_health import SenderSignals
from scheduler.ledger.rows import SenderChangeRow, SenderProfileRow, SessionStatusRow
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import ChangeSource


class SenderStore:
    """The ledger as the senders' store, seen from run ``run_id`` (see the module)."""

    def __init__(self, ledger: Ledger, run_id: int) -> None:
        self.ledger = ledger
        self.run_id = run_id

    def sender_profiles(self, senders: Collection[str], now: datetime, *,
                        new_state: str) -> dict[str, SenderProfileRow]:
        """The profiles of ``senders``, each made first when missing (``new_state``)."""
        with access.transaction(self.ledger.engine, "read the senders' profiles") as conn:
            spq.ensure_profiles(conn, senders, now, state=new_state)
            return spq.profiles(conn, senders)

    def read_sender_profiles(self, senders: Collection[str]) -> dict[str, SenderProfileRow]:
        """The stored profiles of ``senders`` (a person or another worker may change them)."""
        with access.read(self.ledger.engine, "read the senders' profiles") as conn:
            return spq.profiles(conn, senders)

    def change_sender_state(self, sender: str, state: str, reason: str | None, now: datetime,
                            *, source: str, score: float | None = None,
                            throttle: float | None = None) -> bool:
        """Move a sender to ``state`` (kept in its history); True when it changed."""
        with access.transaction(self.ledger.engine, f"record sender {sender}'s state") as conn:
            return spq.change_state(conn, sender, state, reason, source, now, score=score,
                                    throttle=throttle)

    def advance_warm_day(self, sender: str, local_date: date, day: int) -> bool:
        """Set a sender's warm-up day for ``local_date`` (once per date)."""
        with access.transaction(self.ledger.engine, "advance a warm-up day") as conn:
            return spq.advance_warm_day(conn, sender, local_date, day)

    def sender_signals(self, senders: Collection[str], since: datetime,
                       undelivered_before: datetime) -> dict[str, SenderSignals]:
        """What the ledger knows of each sender's sends since ``since``."""
        with access.read(self.ledger.engine, "count the senders' signals") as conn:
            return shq.signals_since(conn, senders, since, undelivered_before)

    def last_sends(self, senders: Collection[str]) -> dict[str, datetime]:
        """Each sender's latest dispatch, any run."""
        with access.read(self.ledger.engine, "read the senders' latest sends") as conn:
            return shq.last_sends(conn, senders)

    def calls_in_progress(self, since: datetime, channel: str) -> tuple[int, int]:
        """Calls in progress in this run, and in every running run of ``channel``."""
        with access.read(self.ledger.engine, "count calls in progress") as conn:
            return scq.calls_in_progress(conn, self.run_id, since, channel)

    def calls_under_way(self, senders: Sequence[str], since: datetime
                        ) -> dict[str, datetime]:
        """Senders with a call under way, and when it was claimed."""
        with access.read(self.ledger.engine, "read the calls under way per sender") as conn:
            return scq.calls_under_way(conn, self.run_id, senders, since)

    def session_statuses(self, senders: Sequence[str], since: datetime
                         ) -> dict[str, SessionStatusRow]:
        """The latest ``connection.status`` of each sender's session since ``since``."""
        with access.read(self.ledger.engine, "read the senders' session status") as conn:
            return sq.latest_statuses(conn, senders, since=since)



#: What a person's command moves a sender to, from its state (None: no profile) and its
#: changes (newest first); None: nothing to change.
Target = Callable[[str | None, list[SenderChangeRow]], str | None]


def change_by_operator(engine: Engine, sender: str, target: Target, reason: str,
                       now: datetime) -> tuple[str | None, str | None, bool]:
    """In one transaction: the sender's state, the state ``target`` moves it to (None:
    none) and whether it changed (kept in its history as the operator's)."""
    with access.transaction(engine, f"change sender {sender} by hand") as conn:
        held = spq.profiles(conn, [sender]).get(sender)
        was = held.state if held is not None else None
        to = target(was, spq.history(conn, sender))
        if to is None:
            return was, None, False
        return was, to, spq.change_state(conn, sender, to, reason, ChangeSource.OPERATOR, now)


def last_session_status(engine: Engine, session_id: str) -> SessionStatusRow | None:
    """The last ``connection.status`` stored for a session (``campaign sessions``)."""
    with access.read(engine, "read the session's last status event") as conn:
        return sq.latest_statuses(conn, [session_id]).get(session_id)


def stored_profiles(engine: Engine, senders: Collection[str]) -> list[SenderProfileRow]:
    """The stored profiles of ``senders`` in ``engine``'s ledger."""
    with access.read(engine, "read the senders' profiles") as conn:
        return list(spq.profiles(conn, senders).values())


def seed_profiles(engine: Engine, profiles: Sequence[SenderProfileRow], now: datetime) -> None:
    """Give ``engine``'s ledger these profiles: state, reason and warm-up day (a
    rehearsal's ledger starts where the project's has its senders)."""
    if not profiles:
        return
    with access.transaction(engine, "copy the project's sender profiles") as conn:
        for p in profiles:
            spq.ensure_profiles(conn, [p.sender], now, state=p.state, reason=p.reason,
                                warm_profile=p.warm_profile)
            if p.warm_day_date is not None:
                spq.advance_warm_day(conn, p.sender, p.warm_day_date, p.warm_day)


__all__ = ["SenderStore", "Target", "change_by_operator", "last_session_status", "seed_profiles",
           "stored_profiles"]
