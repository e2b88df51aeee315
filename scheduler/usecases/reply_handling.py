"""Marking a reply as handled: a person read it and dealt with it (the inbox's action).

The dashboard's ``POST /replies/{id}/handled`` calls :func:`mark_handled`; the ledger keeps
who and when (``reply_handled``, migration 0020), the first person's mark when two act at
once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from scheduler.core.errors import SchedulerError
from scheduler.ledger.reply_store import ReplyStore
from scheduler.ledger.runs import Ledger


class NoSuchReply(SchedulerError):
    """The ledger holds no reply with this id."""


@dataclass(frozen=True)
class Handled:
    """What marking did: ``done`` (False: someone had marked it already, ``by`` at ``at``)."""

    done: bool
    by: str
    at: datetime


def mark_handled(ledger: Ledger, reply_id: int, by: str, now: datetime) -> Handled:
    """Record that ``by`` handled reply ``reply_id`` now (kept: an earlier mark)."""
    marked = ReplyStore(ledger.engine).mark_handled(reply_id, by, now)
    if marked is None:
        raise NoSuchReply(f"there is no reply {reply_id} in this ledger")
    done, by_whom, at = marked
    return Handled(done=done, by=by_whom, at=at)
