"""What the progress bar says besides its numbers: why the run waits, until when, and what
the user can do.

:class:`BarState` follows the dispatcher's timeline (:class:`TimelineEntry` ``kind``) and
the run's options; :func:`waiting_line` is a pure function of that state and a fixed
``now``, so every sentence is tested with fixed datetimes. The bar shows its line under the
numbers and redraws it as the clock moves (the countdown of a wait is live).

- The window is closed: ``waiting for the sending window: it opens 2026-11-24 09:00 -03:00
  (in 11 h 58 min)``, in the campaign's zone.
- After a crash: which sends are verified against the service's events, and until when.
- A sender's session is not connected: which, why, that its deliveries go to the other
  senders (or that nothing can be sent), and the commands that reconnect it.
- A sender reached its daily cap or plan limit: which, its cap, when it was reached and
  when it sends again (:func:`scheduler.dispatch.caps.describe`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from scheduler.dispatch.caps import describe as describe_caps
from scheduler.dispatch.results import CapWait, TimelineEntry
from scheduler.dispatch.windows import SendWindow
from scheduler.display import clock_time, local_time, span
from scheduler.run_options import RunOptions


@dataclass
class _Down:
    """A sender out of rotation: why, since when, and whether only a ``connected`` event
    brings it back (``sticky``), or its next try after the cool-off (a failed send)."""

    why: str
    at: datetime
    sticky: bool


@dataclass
class BarState:
    """What the run is waiting for, as the timeline told it."""

    zone: str
    senders: tuple[str, ...] = ()
    window: SendWindow | None = None
    recipient_timezone: bool = False
    #: Senders out of rotation (their session, or repeated failures).
    down: dict[str, _Down] = field(default_factory=dict)
    #: After a crash: how many sends are verified against events, until when.
    verifying: int = 0
    verifying_until: datetime | None = None
    #: The window closed and reopens then (the engine's own word, when it said it).
    window_opens: datetime | None = None
    #: Recipients' own zones: every delivery left waits for its recipient's window, the
    #: first until then (the engine's ``recipients_wait`` note).
    recipients_wait_until: datetime | None = None
    #: A retry's pause between two tries of a down sender (the engine's cool-off).
    retry_every_s: float = 60.0
    #: Senders at their daily cap or plan limit (the engine's ``sender_capped`` notes).
    capped: dict[str, CapWait] = field(default_factory=dict)

    @classmethod
    def for_run(cls, options: RunOptions, *, channel: str = "whatsapp",
                retry_every_s: float = 60.0) -> BarState:
        """The state at the start of a run with these options."""
        return cls(zone=options.timezone,
                   senders=options.senders if channel == "whatsapp" else (),
                   window=SendWindow.of(options.window, options.timezone),
                   recipient_timezone=options.recipient_timezone,
                   retry_every_s=retry_every_s)

    def take(self, entry: TimelineEntry) -> None:
        """Follow one timeline entry."""
        if entry.kind == "window_closed":
            self.window_opens = entry.until
        elif entry.kind == "window_open":
            self.window_opens = None
        elif entry.kind == "recipients_wait":
            self.recipients_wait_until = entry.until
        elif entry.kind == "recipients_resume":
            self.recipients_wait_until = None
        elif entry.kind == "verifying":
            self.verifying_until = entry.until
            self.verifying = _verifying_count(entry.what)
        elif entry.kind == "sender_down" and entry.sender:
            sticky = "connection.status" in entry.what  # said once, until it reconnects
            self.down[entry.sender] = _Down(entry.why or "not available", entry.at, sticky)
        elif entry.kind == "sender_up" and entry.sender:
            self.down.pop(entry.sender, None)
        elif entry.kind == "sender_capped" and entry.cap is not None:
            self.capped[entry.cap.sender] = entry.cap

    def senders_down(self, now: datetime) -> list[str]:
        """Senders out of rotation now, in the campaign's order. One paused by a failed
        send is tried again after the cool-off and said down again if it fails: without
        a new word for two cool-offs it is taken to be sending again."""
        fresh = {name for name, down in self.down.items()
                 if down.sticky or (now - down.at).total_seconds() <= 2 * self.retry_every_s}
        return [name for name in (*self.senders, *sorted(fresh - set(self.senders)))
                if name in fresh]


def _verifying_count(what: str) -> int:
    """The number before "being verified" in the engine's recovery line (0 when none)."""
    head, found, _ = what.partition(" being verified")
    if not found:
        return 0
    number = head.rsplit(" ", 1)[-1].replace(",", "")
    return int(number) if number.isdigit() else 0


def _window_line(state: BarState, now: datetime) -> str | None:
    if state.recipient_timezone:
        until = state.recipients_wait_until
        if until is None or until <= now:
            return None
        return (f"waiting for the recipients' own sending windows (their time zones): the "
                f"first opens {local_time(until, state.zone)} (in {span(until - now)})")
    opens = state.window_opens
    if opens is None or opens <= now:
        if state.window is None or state.window.is_open(now):
            return None
        opens = state.window.next_open(now)
    return (f"waiting for the sending window: it opens {local_time(opens, state.zone)} "
            f"(in {span(opens - now)})")


def _verifying_line(state: BarState, now: datetime) -> str | None:
    until = state.verifying_until
    if until is None or until <= now or not state.verifying:
        return None
    return (f"after a crash: verifying {state.verifying:,} sends against the service's "
            f"events (messages.sent) until {clock_time(until, state.zone)}, "
            f"{span(until - now)} at most; nothing is sent twice meanwhile")


def _senders_line(state: BarState, now: datetime) -> str | None:
    down = state.senders_down(now)
    if not down:
        return None
    first = down[0]
    names = ", ".join(down)
    why = state.down[first].why
    if len(down) >= max(len(state.senders), 1):
        lead = (f"nothing can be sent: {'sender' if len(down) == 1 else 'senders'} {names} "
                f"not connected ({why}); retrying every {span(state.retry_every_s)}")
    else:
        lead = (f"{'sender' if len(down) == 1 else 'senders'} {names} not connected "
                f"({why}): {'its' if len(down) == 1 else 'their'} deliveries go to the "
                "other senders")
    return (f"{lead}. Check it with `campaign sessions status {first}`; reconnect it "
            f"with `campaign sessions qr {first}` and scan the QR code with its phone")


def _caps_line(state: BarState, now: datetime) -> str | None:
    lines = describe_caps(state.capped.values(), state.zone, now,
                          senders=len(state.senders) or 1)
    return "\n".join(lines) if lines else None


def waiting_line(state: BarState, now: datetime) -> str | None:
    """Why the run is not sending at full pace right now, and what to do; ``None`` when
    nothing holds it back. The most blocking reason first: the window, then a crash's
    verification, then senders whose session is not connected, then senders at their
    daily cap or plan limit."""
    lines = [line for line in (_window_line(state, now), _verifying_line(state, now),
                               _senders_line(state, now), _caps_line(state, now)) if line]
    return "\n".join(lines) if lines else None
