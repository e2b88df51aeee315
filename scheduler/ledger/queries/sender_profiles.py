"""Each sender's profile and the history of its states (``sender_profiles``,
``sender_state_changes``): shared by every run, campaign and worker of the ledger.

A profile is made the first time the project plans or sends through a sender
(:func:`ensure_profiles`, insert-or-ignore: two workers meeting a new sender make one row).
Its state moves only through :func:`change_state`, which writes one history row when the
state or its reason changes, in the caller's transaction, so the two never disagree.

Hot: :func:`sends_since` (a warm-up cap counted exactly inside the claim transaction, over
every run and worker) reads ``ix_deliveries_sender_dispatched`` (migration 0009), the
sender's rows since the time given only. The rest runs when a state changes or a person asks.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import Connection, and_, func, or_, select, update

from scheduler.ledger.queries.common import insert_or_ignore
from scheduler.ledger.queries.tables import deliveries, sender_profiles, sender_state_changes
from scheduler.ledger.rows import SenderChangeRow, SenderProfileRow
from scheduler.ledger.states import ChangeSource, DeliveryState, SenderStatus

P = sender_profiles
H = sender_state_changes

#: A sender's latest send is its newest dispatched row (``sender_health.last_sends``).
_PROFILE_COLUMNS = (P.c.sender, P.c.first_seen_at, P.c.state, P.c.reason, P.c.since,
                    P.c.warm_profile, P.c.warm_day, P.c.warm_day_date, P.c.score, P.c.throttle)

#: The reason of a profile's first state, unless the caller gives one.
NEW_SENDER_REASON = "new sender: warm-up starts"


def ensure_profiles(conn: Connection, senders: Collection[str], now: datetime, *,
                    state: str = SenderStatus.WARMING, reason: str | None = None,
                    warm_profile: str | None = None) -> list[str]:
    """Make the profile of each of ``senders`` that has none: ``state`` (warming, day 1)
    since ``now``, with a first history row (source ``engine``); the senders made.

    ``INSERT ... ON CONFLICT DO NOTHING RETURNING``: a profile another worker made first is
    left as it is (and gets no second history row)."""
    if not senders:
        return []
    why = reason if reason is not None else (
        NEW_SENDER_REASON if state == SenderStatus.WARMING else None)
    stmt = insert_or_ignore(conn.dialect.name, P).values([
        {"sender": s, "first_seen_at": now, "state": str(state), "reason": why,
         "since": now, "warm_profile": warm_profile, "warm_day": 1, "throttle": 1.0}
        for s in sorted(set(senders))
    ]).on_conflict_do_nothing(index_elements=[P.c.sender]).returning(P.c.sender)
    made = sorted(conn.execute(stmt).scalars())
    if made:
        conn.execute(H.insert(), [
            {"sender": s, "at": now, "from_state": None, "to_state": str(state),
             "reason": why, "source": str(ChangeSource.ENGINE), "score": None}
            for s in made
        ])
    return made


def profiles(conn: Connection, senders: Collection[str] | None = None
             ) -> dict[str, SenderProfileRow]:
    """The profiles of ``senders`` (every profile when None), by sender."""
    stmt = select(*_PROFILE_COLUMNS).order_by(P.c.sender)
    if senders is not None:
        if not senders:
            return {}
        stmt = stmt.where(P.c.sender.in_(sorted(set(senders))))
    return {row.sender: _profile(row) for row in conn.execute(stmt)}


def _profile(row: Sequence[Any]) -> SenderProfileRow:
    values = list(row)  # the columns above; numbers as Python's (PostgreSQL: float8)
    values[6] = int(values[6])
    values[8] = None if values[8] is None else float(values[8])
    values[9] = float(values[9])
    return SenderProfileRow(*values)


def _lock(conn: Connection, sender: str) -> SenderProfileRow | None:
    """The sender's profile, locked until the caller's transaction ends.

    A no-op ``UPDATE`` first: on PostgreSQL it locks the row (a concurrent change waits,
    then reads what this one wrote); on SQLite it takes the database's write lock before
    the read (a read first, then a write, fails with "database is locked" when another
    process wrote in between)."""
    conn.execute(update(P).where(P.c.sender == sender).values(state=P.c.state))
    row = conn.execute(select(*_PROFILE_COLUMNS).where(P.c.sender == sender)).first()
    return _profile(row) if row is not None else None


def change_state(conn: Connection, sender: str, to_state: str, reason: str | None,
                 source: str, now: datetime, *, score: float | None = None,
                 throttle: float | None = None) -> bool:
    """Move ``sender`` to ``to_state`` for ``reason``; True when its state or reason
    changed, then recorded with one history row (``since`` moves with the state only).

    ``score`` and ``throttle``, when given, are written in any case (an unchanged state
    keeps its history as it is). A ``retired`` sender is moved only by a person (source
    ``operator``): anything else leaves it untouched (False). A sender without a profile
    gets one first. All in the caller's transaction, the profile row locked meanwhile."""
    ensure_profiles(conn, [sender], now)
    held = _lock(conn, sender)
    assert held is not None  # made just above, in this transaction
    if held.state == SenderStatus.RETIRED and source != ChangeSource.OPERATOR:
        return False
    values: dict[str, object] = {}
    if score is not None:
        values["score"] = score
    if throttle is not None:
        values["throttle"] = throttle
    changed = held.state != to_state or held.reason != reason
    if changed:
        values.update(state=str(to_state), reason=reason)
        if held.state != to_state:
            values["since"] = now
    if values:
        conn.execute(update(P).where(P.c.sender == sender).values(**values))
    if changed:
        conn.execute(H.insert().values(
            sender=sender, at=now, from_state=held.state, to_state=str(to_state),
            reason=reason, source=str(source),
            score=score if score is not None else held.score))
        if held.state != to_state:  # its outgoing webhook event, in this transaction
            from scheduler.ledger import outbox

            outbox.sender_changed(conn, sender, held.state, str(to_state), reason,
                                  str(source), now)
    return changed


def history(conn: Connection, sender: str | None = None, limit: int = 200
            ) -> list[SenderChangeRow]:
    """The latest ``limit`` state changes (of ``sender``, or of every sender), newest
    first (``ix_sender_state_changes_sender`` for one sender)."""
    stmt = select(H.c.id, H.c.sender, H.c.at, H.c.from_state, H.c.to_state, H.c.reason,
                  H.c.source, H.c.score).order_by(H.c.id.desc()).limit(limit)
    if sender is not None:
        stmt = stmt.where(H.c.sender == sender)
    return [SenderChangeRow(*row) for row in conn.execute(stmt)]


def latest_changes(conn: Connection, senders: Collection[str]) -> dict[str, SenderChangeRow]:
    """Each of ``senders``' latest state change (as ``history(conn, sender, 1)`` gives it),
    in one statement: each one's highest id (``ix_sender_state_changes_sender``); a sender
    with no change is left out."""
    if not senders:
        return {}
    newest = (select(func.max(H.c.id)).where(H.c.sender.in_(sorted(set(senders))))
              .group_by(H.c.sender))
    stmt = select(H.c.id, H.c.sender, H.c.at, H.c.from_state, H.c.to_state, H.c.reason,
                  H.c.source, H.c.score).where(H.c.id.in_(newest))
    return {str(row.sender): SenderChangeRow(*row) for row in conn.execute(stmt)}


def advance_warm_day(conn: Connection, sender: str, local_date: date, new_day: int) -> bool:
    """Set ``sender``'s warm-up day to ``new_day`` for ``local_date``, once per date: False
    when it was already set for that date (by another worker, say)."""
    stmt = (update(P).where(P.c.sender == sender,
                            or_(P.c.warm_day_date.is_(None), P.c.warm_day_date != local_date))
            .values(warm_day=new_day, warm_day_date=local_date))
    return bool(conn.execute(stmt).rowcount)


def sends_since(conn: Connection, senders: Collection[str], since: datetime
                ) -> dict[str, int]:
    """Rows dispatched through each of ``senders`` at or after ``since``, in every run and
    by every worker (0 for a sender with none); a row back in ``planned`` (a retry to
    come) is not a send, as for the daily cap.

    Hot (inside the claim transaction, for warm-up caps counted exactly): one ``GROUP BY``
    over ``ix_deliveries_sender_dispatched``, each sender's rows since ``since`` only."""
    if not senders:
        return {}
    wanted = sorted(set(senders))
    stmt = (select(deliveries.c.sender, func.count())
            .where(and_(deliveries.c.sender.in_(wanted),
                        deliveries.c.dispatched_at >= since,
                        deliveries.c.state != DeliveryState.PLANNED))
            .group_by(deliveries.c.sender))
    counted = {sender: int(n) for sender, n in conn.execute(stmt)}
    return {s: counted.get(s, 0) for s in wanted}
