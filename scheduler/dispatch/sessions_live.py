"""Senders follow their sessions: out of rotation while not connected, back when connected.

At each control poll (every half second of a run) the dispatcher asks the ledger for the
latest ``connection.status`` of each sender's session that the receiver stored since the
run's pool was made (:func:`scheduler.ledger.queries.sessions.latest_statuses`). A status
other than ``connected`` (``disconnected``, ``logged_out``, ``qr_ready``...) takes the
sender out of rotation at once, before a send fails on it with a 409, and keeps it out (its
cool-off is renewed at every poll) for as long as it lasts: its deliveries go to the other
senders. ``connected`` brings back a sender taken out here, without waiting for its
cool-off. Only events stored since the pool was made count: a status left from an earlier
day must not keep a sender out (at start the senders are checked on the service itself).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from scheduler.dispatch.senders import SenderPool
from scheduler.dispatch.store import SenderStore

#: The start of the ``down_reason`` of a sender taken out here (only those come back here).
DOWN_PREFIX = "session status "


def follow_sessions(store: SenderStore, pool: SenderPool | None, now: datetime,
                    note: Callable[..., None], *,
                    on_status: Callable[[str, str, datetime], None] | None = None) -> None:
    """Take senders whose session is not connected out of rotation; bring back those whose
    session connected again; ``note(at, what, **facts)`` says each change once (facts as
    :class:`~scheduler.dispatch.results.TimelineEntry` has them); ``on_status(sender,
    status, now)`` is told each change too (the sender's profile keeps it)."""
    if pool is None or not pool.senders:
        return
    latest = store.session_statuses(list(pool.senders), pool.started_at)
    for name, row in latest.items():
        state = pool.senders[name]
        ours = state.down_reason is not None and state.down_reason.startswith(DOWN_PREFIX)
        if row.status == "connected":
            if ours:
                pool.on_up(state)
                note(now, f"sender {name} back in rotation: its session is connected again",
                     kind="sender_up", sender=name)
                if on_status is not None:
                    on_status(name, row.status, now)
            continue
        reason = f"{DOWN_PREFIX}{row.status}" + (f" ({row.reason})" if row.reason else "")
        if state.down_reason != reason:
            note(now, f"sender {name} out of rotation: its session is {row.status} "
                 "(connection.status event)", kind="sender_down", sender=name,
                 why=f"its session is {row.status}")
            if on_status is not None:
                on_status(name, row.status, now)
        pool.on_down(state, now, reason)
