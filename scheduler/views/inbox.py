"""The inbox: replies across runs, newest first, each with its delivery, step, number and
name beside it, and its state (new, to answer, handled).

Read by ``campaign replies`` and the dashboard's ``/replies`` page (and its live section);
the SQL is :mod:`scheduler.ledger.inbox_reads`. A reply's state and what "to answer"
means are said there. ``--since`` takes a duration back from now (``2h``, ``3d``) or a
date or time (``2026-11-28``, ``2026-11-28T09:00-03:00``; UTC unless it says its offset).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel

from scheduler.core.errors import SchedulerError
from scheduler.core.units import UnitError, parse_duration
from scheduler.ledger import access, inbox_reads
from scheduler.ledger.inbox_reads import InboxFilter, InboxReads, InboxRow
from scheduler.ledger.runs import Ledger
from scheduler.views.run_parts import recipient

#: The states a reply may be in (the inbox's filter).
STATES = inbox_reads.STATES

#: Replies shown at most (the newest; ``more`` says when there are others).
SHOWN = 100


class InboxError(SchedulerError):
    """A filter the inbox cannot use (an unknown state, a ``--since`` it cannot read)."""


class InboxReply(BaseModel):
    """One reply, with what it answers."""

    id: int
    received_at: datetime
    number: str
    #: the recipient's name from the CSV values of the delivery it answers (escaped when shown)
    name: str | None = None
    kind: str
    text: str | None = None
    opt_out: bool = False
    #: ``new``, ``to answer`` or ``handled``
    state: str
    run_id: int | None = None
    campaign: str | None = None
    #: the run's zone (times are shown in it); None: a reply to no delivery
    timezone: str | None = None
    delivery_id: int | None = None
    #: the step it answers (0: the first), and which attempt of it
    step: int | None = None
    attempt: int | None = None
    sender: str | None = None
    handled_by: str | None = None
    handled_at: datetime | None = None


class InboxView(BaseModel):
    """What the inbox shows under one filter."""

    run_id: int | None = None
    campaign: str | None = None
    state: str | None = None
    since: datetime | None = None
    #: replies per state under the filter (its state aside)
    counts: dict[str, int]
    replies: list[InboxReply]
    #: more replies than shown match the filter
    more: bool = False
    #: changes whenever what is shown would (the live section's event id)
    version: str
    read_at: datetime


def parse_since(text: str | None, now: datetime) -> datetime | None:
    """``--since``: a duration back from ``now`` or a date/time (see the module)."""
    if text is None or not text.strip():
        return None
    value = text.strip()
    try:
        return now - timedelta(seconds=parse_duration(value))
    except UnitError:
        pass
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InboxError(f"--since {text!r}: expected a duration back from now (2h, 3d) or "
                         "a date or time (2026-11-28, 2026-11-28T09:00-03:00)") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def check_state(state: str | None) -> str | None:
    """``state`` when it is one the inbox knows (``to-answer`` spelled either way)."""
    if state is None or not state.strip():
        return None
    spelled = state.strip().lower().replace("-", " ").replace("_", " ")
    if spelled not in STATES:
        raise InboxError(f"state {state!r}: expected one of {', '.join(STATES)}")
    return spelled


def _reply(row: InboxRow) -> InboxReply:
    return InboxReply(id=row.id, received_at=row.received_at, number=row.number,
                      name=recipient(row.variables), kind=row.kind, text=row.text,
                      opt_out=row.opt_out, state=row.state, run_id=row.run_id,
                      campaign=row.campaign, timezone=row.timezone,
                      delivery_id=row.delivery_id, step=row.step, attempt=row.attempt,
                      sender=row.sender or row.session_id, handled_by=row.handled_by,
                      handled_at=row.handled_at)


def _version(counts: dict[str, int], shown: list[InboxReply]) -> str:
    digest = hashlib.sha1(usedforsecurity=False)
    digest.update(repr(sorted(counts.items())).encode())
    for reply in shown:
        digest.update(f"{reply.id}:{reply.state}:{reply.handled_at};".encode())
    return digest.hexdigest()[:16]


def read_inbox(ledger: Ledger, *, now: datetime, run_id: int | None = None,
               campaign: str | None = None, state: str | None = None,
               since: datetime | None = None, limit: int = SHOWN) -> InboxView:
    """The replies under the filter, newest first (at most ``limit``), and the counts
    per state, read in one snapshot."""
    chosen = InboxFilter(run_id=run_id, campaign=campaign or None,
                            state=check_state(state), since=since)
    with access.snapshot(ledger.engine, "read the replies") as conn:
        reads = InboxReads(conn)
        rows = reads.rows(chosen, limit + 1)
        counts = reads.state_counts(chosen)
    shown = [_reply(row) for row in rows[:limit]]
    return InboxView(run_id=run_id, campaign=chosen.campaign, state=chosen.state,
                     since=since, counts=counts, replies=shown, more=len(rows) > limit,
                     version=_version(counts, shown), read_at=now)
