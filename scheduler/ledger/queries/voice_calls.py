"""Automated voice calls in progress: what the voice channel's limit counts.

A call is in progress from its claim (``dispatching``) until ``call.ended`` stamps
``ended_at``; one whose ``call.ended`` never came stops counting after the time-out the
caller gives (``since``). Read once per loop turn of a voice run: the run's count uses the
claim index (``run_id, state``), and the account's count repeats it over the voice runs
that are running, never a scan of every delivery.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, and_, func, or_, select

from scheduler.ledger.queries.common import state_in
from scheduler.ledger.queries.tables import deliveries, runs
from scheduler.ledger.states import DeliveryState as S
from scheduler.ledger.states import RunStatus

#: States a call may be in while it lasts.
_LIVE = (S.DISPATCHING, S.ACCEPTED, S.SENT, S.ANSWERED)


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
