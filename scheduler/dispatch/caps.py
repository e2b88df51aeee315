"""A sender at its daily cap or plan limit: a wait told as it is, with its true times.

A sender that used its ``daily_cap`` (per local day of the campaign's zone) or its plan
limit (the campaign's ``plan_limit`` a day, or the service's plan quota from
``GET /api/v1/limits/{sessionId}``) sends nothing until the count starts again, and then
only inside the window. The timeline, the progress bar and ``campaign status`` say it the
same way (:func:`cap_sentence`)::

    sender s1 reached its daily cap of 1,000 at 09:16 -03:00; sends again
    2026-12-02 08:00 -03:00

:class:`CapWatch` follows a run's senders in the dispatcher and says each cap once, dated
when it was reached (the send that used the last of it), not when the loop noticed;
:func:`waits_from_counts` finds the same waits from the ledger's count of the day's sends
(``campaign status``). Pure functions of fixed datetimes; no clock is read here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from datetime import datetime, tzinfo

from scheduler.core.time_words import clock_time, local_time, span
from scheduler.core.units import load_zone
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.results import CapWait, TimelineEntry
from scheduler.dispatch.senders import SenderPool, SenderState
from scheduler.dispatch.windows import SendWindow, next_local_midnight

DAILY_CAP = "daily_cap"
PLAN_LIMIT = "plan_limit"

#: When ``sender``'s ``n``-th send since an instant went out (the ledger's answer).
NthSend = Callable[[str, datetime, int], datetime | None]

#: More capped senders than this are summed up in one line, not a line each.
LINES_AT_MOST = 3


def sends_again(ready: datetime, window: SendWindow | None, *,
                recipient_timezone: bool = False) -> datetime:
    """The first instant a sender ready again at ``ready`` may send: the window's next
    opening when ``ready`` falls outside it (recipients' own windows are each row's)."""
    if window is None or recipient_timezone:
        return ready
    return window.next_open(ready)


def limit_words(wait: CapWait) -> str:
    """``its daily cap of 1,000``, ``its plan limit of 5,000 a day``, or the service's."""
    if wait.kind == DAILY_CAP:
        return f"its daily cap of {wait.limit:,}"
    if wait.limit is not None:
        return f"its plan limit of {wait.limit:,} a day"
    return "its plan's message limit (the service's limits)"


def cap_sentence(wait: CapWait, zone: str | tzinfo, *, now: datetime | None = None,
                 latest: datetime | None = None) -> str:
    """``sender s1 reached its daily cap of 1,000 at 09:16 -03:00; sends again
    2026-12-02 08:00 -03:00`` (``(in 22 h 44 min)`` after it, given ``now``); when the
    latest send time comes first, that it sends no more before it."""
    if wait.reached_at is not None:
        at = clock_time(wait.reached_at, zone, seconds=False)
        reached = f"reached {limit_words(wait)} at {at}"
    else:
        reached = f"has used {limit_words(wait)}"
    if latest is not None and wait.sends_again >= latest:
        return (f"sender {wait.sender} {reached}; it sends no more before the latest send "
                f"time {local_time(latest, zone)}")
    countdown = f" (in {span(wait.sends_again - now)})" if now is not None \
        and wait.sends_again > now else ""
    return (f"sender {wait.sender} {reached}; sends again "
            f"{local_time(wait.sends_again, zone)}{countdown}")


def describe(waits: Iterable[CapWait], zone: str | tzinfo, now: datetime, *,
             senders: int, latest: datetime | None = None) -> list[str]:
    """The lines of the senders waiting for their cap now (those whose wait is over are
    left out): a line each, or a summary past :data:`LINES_AT_MOST`; when every one of the
    run's ``senders`` waits, the first line says that nothing is sent meanwhile."""
    current = sorted((w for w in waits if w.sends_again > now),
                     key=lambda w: (w.sends_again, w.sender))
    if not current:
        return []
    lines = [cap_sentence(w, zone, now=now, latest=latest) for w in current[:LINES_AT_MOST]]
    if len(current) > LINES_AT_MOST:
        rest = current[LINES_AT_MOST:]
        lines.append(f"and {len(rest):,} more senders at their daily cap or plan limit, "
                     f"sending again from {local_time(rest[0].sends_again, zone)}")
    if len(current) >= max(senders, 1):
        first = current[0].sends_again
        lead = "nothing can be sent before " + (
            f"the latest send time {local_time(latest, zone)}"
            if latest is not None and first >= latest else local_time(first, zone))
        return [f"{lead}: every sender is at its daily cap or plan limit", *lines]
    return [*lines, "the other senders send their deliveries meanwhile"]


def cap_entry(wait: CapWait, at: datetime, zone: str | tzinfo, *,
              latest: datetime | None = None) -> TimelineEntry:
    """The timeline's line of a sender reaching its cap (``sender_capped``), dated when it
    was reached (else ``at``, when it was found)."""
    return TimelineEntry(wait.reached_at or at, cap_sentence(wait, zone, latest=latest),
                         kind="sender_capped", sender=wait.sender, until=wait.sends_again,
                         cap=wait)


def waits_from_counts(options: DispatchOptions, sent_today: Mapping[str, int],
                      now: datetime, nth_send: NthSend | None = None) -> list[CapWait]:
    """The run's senders at their daily cap or at the campaign's plan limit, from today's
    sends per sender (the ledger's count since the local midnight of the campaign's zone);
    ``nth_send`` tells when the cap was reached. The service's own plan quota is not in
    the ledger: only the dispatcher, which asked the service, knows it."""
    zone = load_zone(options.timezone)
    day_start = now.astimezone(zone).replace(hour=0, minute=0, second=0, microsecond=0)
    resets = next_local_midnight(now, zone)
    again = sends_again(resets, options.window, recipient_timezone=options.recipient_timezone)
    found: list[CapWait] = []
    for name in options.senders:
        n = sent_today.get(name, 0)
        limits = [(kind, limit) for kind, limit in ((DAILY_CAP, options.daily_cap),
                                                     (PLAN_LIMIT, options.plan_limit))
                  if limit is not None and n >= limit]
        if not limits:
            continue
        kind, limit = min(limits, key=lambda item: item[1])  # the one reached first
        reached = nth_send(name, day_start, limit) if nth_send is not None else None
        found.append(CapWait(name, kind, limit, reached, again))
    return found


class CapWatch:
    """Says once, each time it happens, that a sender of a run reached its daily cap or
    plan limit, and when it sends again (:meth:`look`)."""

    def __init__(self, options: DispatchOptions, *, service_quotas: Collection[str] = (),
                 nth_send: NthSend | None = None) -> None:
        self.options = options
        self.zone = load_zone(options.timezone)
        #: Senders whose plan quota is the service's (its limit is not known here).
        self.service_quotas = frozenset(service_quotas)
        self.nth_send = nth_send
        self._said: set[tuple[str, str, datetime]] = set()
        #: Caps reached by the latest claims, said at the next turn that still has work
        #: (a cap reached by the very last send of a run is no wait).
        self._pending: list[TimelineEntry] = []

    def look(self, pool: SenderPool, claimed: Iterable[SenderState], *, stuck: bool,
             now: datetime) -> list[TimelineEntry]:
        """The timeline lines of caps to say now. Called on each turn that has rows to
        send: ``claimed`` the senders that just sent (a cap they reached is said at the
        next such turn); ``stuck``: no sender may send now, so every one this process
        sends through is looked at (a cap reached before this start, or by another
        worker)."""
        entries, self._pending = self._pending, []
        if stuck:
            entries += [entry for state in pool.senders.values()
                        if (pool.held is None or state.name in pool.held)
                        and (entry := self._entry(state, now)) is not None]
        for state in {state.name: state for state in claimed}.values():
            if state.quota_left <= 0 or state.pace.daily.cap is not None:
                entry = self._entry(state, now)
                if entry is not None:
                    self._pending.append(entry)
        return entries

    def wait_of(self, state: SenderState, now: datetime) -> tuple[CapWait, datetime] | None:
        """The cap ``state`` waits for at ``now`` and when that cap starts again; ``None``
        when it is under both."""
        daily = state.pace.daily
        candidates: list[tuple[datetime, str, int | None]] = []
        if daily.cap is not None and daily.remaining(now) <= 0:
            candidates.append((daily.next_reset(now), DAILY_CAP, daily.cap))
        resets = state.quota_resets_at
        if state.quota_left <= 0 and resets is not None and resets > now:
            limit = None if state.name in self.service_quotas else self.options.plan_limit
            candidates.append((resets, PLAN_LIMIT, limit))
        if not candidates:
            return None
        reset, kind, limit = max(candidates, key=lambda c: c[0])  # the later reset binds
        last = state.last_scheduled
        reached = last if last is not None and last <= now and (
            kind != DAILY_CAP or daily.next_reset(last) == reset) else None
        if reached is None and limit is not None and self.nth_send is not None:
            day_start = now.astimezone(self.zone).replace(hour=0, minute=0, second=0,
                                                          microsecond=0)
            reached = self.nth_send(state.name, day_start, limit)
        again = sends_again(state.ready_at(now), self.options.window,
                            recipient_timezone=self.options.recipient_timezone)
        return CapWait(state.name, kind, limit, reached, again), reset

    def _entry(self, state: SenderState, now: datetime) -> TimelineEntry | None:
        found = self.wait_of(state, now)
        if found is None:
            return None
        wait, reset = found
        key = (wait.sender, wait.kind, reset)
        if key in self._said:
            return None
        self._said.add(key)
        return cap_entry(wait, now, self.zone, latest=self.options.latest)
