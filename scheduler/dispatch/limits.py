"""What bounds a loop turn besides the senders' pace: recipients' own windows, calls in progress.

Both are asked by the dispatcher before it picks (:func:`scheduler.dispatch.picking.pick`):
a run sent in each recipient's time zone defers a row whose local window is closed, and a
voice run starts no more calls than its limit and the account's allow, counting the calls
the ledger says are still in progress (see :mod:`scheduler.ledger.queries.sender_calls`).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, tzinfo

from scheduler.campaign.holidays import recipient_calendar
from scheduler.dispatch.channel import Channel
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.senders import SenderPool
from scheduler.dispatch.store import SenderStore
from scheduler.dispatch.windows import SendWindow, zone_for_number, zone_for_region
from scheduler.ledger.rows import DueDelivery


class RecipientWindows:
    """Whether a row's recipient's own window is open now, and if not, when it opens: in
    the recipient's time zone (``recipient_timezone``) and off the holidays of the
    recipient's state (``holidays = "recipient"``). Remembers which state holiday held
    rows back, for the timeline."""

    def __init__(self, window: SendWindow, options: DispatchOptions) -> None:
        self.window = window
        self.options = options
        #: (holiday name, state) -> (rows held, until when)
        self.holidays: dict[tuple[str, str], tuple[int, datetime]] = {}
        self._said: set[tuple[str, str]] = set()

    def __call__(self, row: DueDelivery, now: datetime) -> datetime | None:
        local, options = self.window, self.options
        if options.recipient_timezone:
            zone = zone_for_number(row.to, zone_for_region(row.region or "", options.timezone))
            local = local.in_zone(zone)
        if options.recipient_holidays:
            calendar = recipient_calendar(row.to)
            if calendar is not None:
                local = local.with_holidays(calendar)
        if local.is_open(now):
            return None
        opens = local.next_open(now)
        if options.recipient_holidays and local.holidays is not None:
            for name in local.holidays_between(now, opens):
                key = (name, local.holidays.code.partition("-")[2])
                held, _until = self.holidays.get(key, (0, opens))
                self.holidays[key] = (held + 1, opens)
        return opens

    def notes(self, zone: tzinfo) -> list[tuple[str, datetime]]:
        """Timeline lines, once per state holiday, of the rows it held back so far."""
        out = []
        for key, (held, until) in self.holidays.items():
            if key in self._said:
                continue
            self._said.add(key)
            name, state = key
            out.append((f"holiday: {name} in {state}: {held:,}+ deliveries to {state} "
                        f"numbers wait until {until.astimezone(zone):%Y-%m-%d %H:%M}", until))
        return out


def recipient_window(options: DispatchOptions) -> RecipientWindows | None:
    """When a recipient's own window opens if it is closed now (None: open); ``None`` when
    the run neither sends in the recipients' time zones nor keeps their states' holidays."""
    window = options.window
    if window is None or not (options.recipient_timezone or options.recipient_holidays):
        return None
    return RecipientWindows(window, options)


def call_room(store: SenderStore, channel: Channel, options: DispatchOptions, now: datetime, *,
              events_received: bool = True) -> float:
    """Calls that may still start (voice): the run's limit and the account's, less the calls
    in progress in the ledger; unlimited on other channels.

    Without events (no receiver: a rehearsal, or a remote service without a public
    ``webhook_url``) no call is ever seen to end, so a call counts for the expected length
    of a call (``voice_call_estimate_s``) instead of the time-out.
    """
    if not channel.has_calls:
        return math.inf
    last = options.engine.voice_call_timeout_s if events_received \
        else options.engine.voice_call_estimate_s
    since = now - timedelta(seconds=last)
    mine, everyone = store.calls_in_progress(since, channel.name)
    limit = channel.max_calls or options.engine.voice_max_calls
    return max(0, min(limit - mine, options.engine.voice_max_calls - everyone))


def follow_sender_calls(store: SenderStore, pool: SenderPool, options: DispatchOptions,
                        now: datetime, *, events_received: bool = True) -> None:
    """One WhatsApp call at a time per sender (``calls`` runs): each sender holds while the
    ledger shows a call of it under way (claimed, no terminal event yet), until the
    time-out (``whatsapp_call_timeout_s``; the expected length of a call without events)."""
    if pool.call_hold is None:
        return
    last = options.engine.whatsapp_call_timeout_s if events_received \
        else options.engine.voice_call_estimate_s
    since = now - timedelta(seconds=last)
    pool.follow_calls(store.calls_under_way(list(pool.senders), since))
