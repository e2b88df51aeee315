"""Calls in progress: WhatsApp calls placed to a list (``calls`` runs: which senders have a
call under way, and how a run's calls went) and automated voice calls (what the voice
channel's limit counts).

A call is under way from its claim (``dispatching``) until its terminal event
(``call.ended`` / ``call.not_answered``) stamps ``ended_at``; one whose terminal event
never came stops counting after the time-out the caller gives (``since``). A WhatsApp
session places one call at a time: :func:`calls_under_way` is read once per loop turn of a
``calls`` run, over the rows of the running ``calls`` runs that are still in a live state
(the claim index ``run_id, state``), so a few rows at most: one per sender.
:func:`calls_in_progress` is read once per loop turn of a voice run: the run's count uses
the claim index, and the account's count repeats it over the voice runs that are running,
never a scan of every delivery.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import Connection, and_, func, or_, select

from scheduler.ledger.queries.common import details_key, state_in
from scheduler.ledger.queries.tables import deliveries, runs
from scheduler.ledger.states import DeliveryState as S
from scheduler.ledger.states import RunStatus

#: ``runs.channel`` of WhatsApp calls placed to a list.
CALLS_CHANNEL = "calls"
#: States a call may be in while it lasts (``answered``: connected, not ended yet).
_LIVE = (S.DISPATCHING, S.ACCEPTED, S.SENT, S.ANSWERED)


def calls_under_way(conn: Connection, run_id: int, senders: Sequence[str],
                    since: datetime) -> dict[str, datetime]:
    """Senders with a call under way in run ``run_id`` or any running ``calls`` run: sender
    → when the latest such call was claimed (calls claimed before ``since`` are over)."""
    if not senders:
        return {}
    d = deliveries.c
    calls_runs = select(runs.c.id).where(runs.c.channel == CALLS_CHANNEL,
                                         runs.c.status == RunStatus.RUNNING)
    ids = sorted({run_id, *conn.execute(calls_runs).scalars()})
    stmt = (select(d.sender, func.max(d.dispatched_at))
            .where(d.run_id.in_(ids), state_in(*_LIVE), d.ended_at.is_(None),
                   d.sender.in_(list(senders)), d.dispatched_at >= since)
            .group_by(d.sender))
    return {str(sender): at for sender, at in conn.execute(stmt) if at is not None}


def calls_in_progress(conn: Connection, run_id: int, since: datetime,
                      channel: str = "voice") -> tuple[int, int]:
    """Calls in progress in run ``run_id``, and in every running run of its ``channel``
    (voice; WhatsApp ``calls``) in the ledger."""
    d = deliveries.c
    live = and_(state_in(*_LIVE), d.ended_at.is_(None),
                or_(d.accepted_at >= since,
                    and_(d.accepted_at.is_(None), d.dispatched_at >= since)))
    voice_runs = select(runs.c.id).where(runs.c.channel == channel,
                                         runs.c.status == RunStatus.RUNNING)
    ids = {run_id, *conn.execute(voice_runs).scalars()}
    counts: dict[int, int] = dict(conn.execute(
        select(d.run_id, func.count()).where(d.run_id.in_(sorted(ids)), live)
        .group_by(d.run_id)).all())
    return int(counts.get(run_id, 0)), int(sum(counts.values()))


class CallRunTotals(NamedTuple):
    """How the WhatsApp calls of a run went, besides their states."""

    #: placed and not ended yet (ringing, talking, or no terminal event received)
    open_calls: int
    #: answered calls with a known duration, and their total in milliseconds
    timed: int
    duration_ms: int
    #: answered calls whose recording URL is known (``calls/stream``)
    recorded: int


def call_run_totals(conn: Connection, run_id: int) -> CallRunTotals:
    """Open calls, talk time and recordings of a ``calls`` run (two aggregate rows)."""
    d = deliveries.c
    duration = details_key(conn, "durationMs").as_integer()
    recording = details_key(conn, "recordingUrl").as_string()
    open_calls = select(func.count()).where(
        d.run_id == run_id, state_in(S.ACCEPTED, S.SENT, S.ANSWERED), d.ended_at.is_(None))
    row = conn.execute(select(func.count(duration), func.coalesce(func.sum(duration), 0),
                              func.count(recording))
                       .where(and_(d.run_id == run_id, d.state == S.ANSWERED,
                                   d.details.is_not(None)))).one()
    return CallRunTotals(open_calls=int(conn.execute(open_calls).scalar() or 0),
                         timed=int(row[0]), duration_ms=int(row[1]), recorded=int(row[2]))
