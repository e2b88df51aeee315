"""Which buffered deliveries go out now, on which sender, in which requests (pure).

The dispatcher reads due rows into a buffer in plan order; :func:`pick` takes from its head
what the senders' pace allows now. On a one-by-one channel each row is a request of its own;
on a bulk channel (SMS, voice) the head row takes along the buffered rows of the same
group (:meth:`~scheduler.dispatch.channel.Channel.group_key`) up to the batch size, the
sender's daily cap and plan quota, and (voice) the calls that may still start. A bulk of
``n`` spends ``n`` of the sender's tokens, so the sender's rate holds on average: at
``5/s`` a bulk of 100 is followed by the next one 20 s later.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from scheduler.dispatch.channel import Channel
from scheduler.dispatch.senders import SenderPool, SenderState
from scheduler.ledger.rows import DueDelivery

#: Whether a row may be sent now (its recipient's own window), and if not, when.
WindowCheck = Callable[[DueDelivery, datetime], datetime | None]


@dataclass(slots=True)
class Group:
    """Deliveries sent together by one sender in one request (one row on WhatsApp)."""

    rows: list[DueDelivery]
    sender: SenderState


@dataclass(slots=True)
class Picked:
    """What one turn of the loop sends, defers to a later window, and when to look again."""

    groups: list[Group] = field(default_factory=list)
    deferred: list[tuple[int, datetime]] = field(default_factory=list)
    wake: datetime | None = None
    #: True when calls in progress (voice) stopped the turn: look again shortly.
    calls_full: bool = False

    @property
    def rows(self) -> int:
        """How many deliveries were picked."""
        return sum(len(g.rows) for g in self.groups)


def _allowance(sender: SenderState, now: datetime) -> float:
    """How many more sends the sender's daily cap and plan quota allow now."""
    return min(sender.pace.daily.remaining(now), sender.quota_left)


def pick(buffer: deque[DueDelivery], pool: SenderPool, channel: Channel, now: datetime, *,
         room: int, call_room: float = math.inf,
         closed_until: WindowCheck | None = None) -> Picked:
    """Take from ``buffer`` what may be sent now (see the module doc).

    ``room``: requests that may still start (the engine's concurrency); ``call_room``: calls
    that may still start (voice); ``closed_until``: a recipient's own window, when the run
    sends in each recipient's time zone.
    """
    out = Picked()
    # how many buffered rows each group has: a row whose group has no other row here (a
    # personalised text) is sent alone without scanning the buffer for company, which
    # would cost a pass over up to 2,000 rows per recipient
    others = Counter(map(channel.group_key, buffer)) if channel.batch_size > 1 else None
    while buffer and len(out.groups) < room:
        row = buffer[0]
        if closed_until is not None:
            opens = closed_until(row, now)
            if opens is not None:
                out.deferred.append((row.id, opens))
                buffer.popleft()
                continue
        sender, ready = pool.pick(now, row.sender)
        if sender is None:
            out.wake = ready
            break
        assert ready is not None
        # one-by-one: the pick already honoured the cap and quota (the hot path of P2)
        limit = 1 if channel.batch_size == 1 and call_room >= 1 else \
            int(min(channel.batch_size, _allowance(sender, now), call_room))
        if limit < 1:
            out.calls_full = call_room < 1
            break
        buffer.popleft()
        rows = [row]
        if others is not None:
            key = channel.group_key(row)
            others[key] -= 1
            if limit > 1 and others[key] > 0:
                rows += _take_group(buffer, channel, key, limit - 1, now, closed_until)
                others[key] -= len(rows) - 1
        for _ in rows:
            pool.on_claim(sender, ready, now)
        call_room -= len(rows) if channel.has_calls else 0
        out.groups.append(Group(rows, sender))
    return out


def _take_group(buffer: deque[DueDelivery], channel: Channel, key: object, limit: int,
                now: datetime, closed_until: WindowCheck | None) -> list[DueDelivery]:
    """Remove and return up to ``limit`` buffered rows of group ``key`` (a recipient whose
    own window is closed stays for the head of the loop to defer)."""
    taken: list[DueDelivery] = []
    kept: deque[DueDelivery] = deque()
    while buffer and len(taken) < limit:
        row = buffer.popleft()
        if channel.group_key(row) == key and (
                closed_until is None or closed_until(row, now) is None):
            taken.append(row)
        else:
            kept.append(row)
    buffer.extendleft(reversed(kept))
    return taken
