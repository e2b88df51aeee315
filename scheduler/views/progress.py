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
- A sender held by its profile (``campaign senders``: paused, retired, logged out,
  disconnected): why, and the command that brings it back; every sender held: the run
  waits (the engine's ``senders_held``). A throttled sender: its share of the rate and
  why. A sender warming up: its day and today's cap (the engine's ``warming`` sentence).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from scheduler.core.channel_terms import terms_of
from scheduler.core.time_words import clock_time, local_time, span
from scheduler.dispatch.caps import describe as describe_caps
from scheduler.dispatch.results import CapWait, TimelineEntry
from scheduler.dispatch.windows import SendWindow
from scheduler.ledger.states import HELD_STATES, SenderStatus
from scheduler.settings.run import RunOptions

#: Held states a reconnection ends (the rest need a person's ``senders resume``).
_SESSION_HELD = (SenderStatus.LOGGED_OUT, SenderStatus.DISCONNECTED)


@dataclass
class _Down:
    """A sender out of rotation: why, since when, and whether only a ``connected`` event
    brings it back (``sticky``), or its next try after the cool-off (a failed send)."""

    why: str
    at: datetime
    sticky: bool
    #: The sender's profile state when its profile holds it (``paused``, ``retired``,
    #: ``logged_out``, ``disconnected``): only a ``sender_up`` ends it.
    held: str | None = None


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
    #: Throttled senders: (the share of their rate, why), from ``sender_throttled``.
    throttled: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: Senders on their warm-up ramp: the engine's sentence (``warming``).
    warming: dict[str, str] = field(default_factory=dict)
    #: Every sender is held (``senders_held``), until one is back (``sender_up``).
    all_held: bool = False

    @classmethod
    def for_run(cls, options: RunOptions, *, channel: str = "whatsapp",
                retry_every_s: float = 60.0) -> BarState:
        """The state at the start of a run with these options."""
        return cls(zone=options.timezone,
                   senders=options.senders if terms_of(channel).sessions else (),
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
            held = profile_hold(entry)
            sticky = held is not None or "connection.status" in entry.what  # until back
            self.down[entry.sender] = _Down(entry.why or "not available", entry.at, sticky,
                                            held)
        elif entry.kind == "sender_up" and entry.sender:
            self.down.pop(entry.sender, None)
            self.throttled.pop(entry.sender, None)
            self.all_held = False
        elif entry.kind == "sender_capped" and entry.cap is not None:
            self.capped[entry.cap.sender] = entry.cap
        elif entry.kind == "sender_throttled" and entry.sender:
            share = re.search(r"throttled to (\d+%)", entry.what)
            self.throttled[entry.sender] = (share.group(1) if share else "part",
                                            entry.why or "its health score fell")
        elif entry.kind == "warming" and entry.sender:
            self.warming[entry.sender] = entry.what
        elif entry.kind == "senders_held":
            self.all_held = True

    def senders_down(self, now: datetime) -> list[str]:
        """Senders out of rotation now, in the campaign's order. One paused by a failed
        send is tried again after the cool-off and said down again if it fails: without
        a new word for two cool-offs it is taken to be sending again."""
        fresh = {name for name, down in self.down.items()
                 if down.sticky or (now - down.at).total_seconds() <= 2 * self.retry_every_s}
        return [name for name in (*self.senders, *sorted(fresh - set(self.senders)))
                if name in fresh]


def profile_hold(entry: TimelineEntry) -> str | None:
    """The profile state of a ``sender_down`` the sender's profile made (the engine's
    sender care says it in ``entry.state``), or None (a failed send, a session's status)."""
    return entry.state if entry.state in HELD_STATES else None


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
    down = [name for name in state.senders_down(now) if state.down[name].held is None]
    held = [name for name in state.senders_down(now) if state.down[name].held is not None]
    if held and (state.all_held or len(held) >= max(len(state.senders), 1)):
        return _all_held_line(state, held)
    lines = [_held_line(state, name) for name in held]
    if down:
        lines.append(_not_connected_line(state, down))
    return "\n".join(lines) if lines else None


def _back_with(name: str, held: str) -> str:
    if held in _SESSION_HELD:
        return (f"reconnect it with `campaign sessions qr {name}` and scan the QR code "
                "with its phone")
    return f"resume it with `campaign senders resume {name} --reason TEXT`"


def _held_line(state: BarState, name: str) -> str:
    down = state.down[name]
    assert down.held is not None
    return (f"sender {name} {down.held} ({down.why}): its deliveries go to the other "
            f"senders; {_back_with(name, down.held)}")


def _all_held_line(state: BarState, held: list[str]) -> str:
    causes = "; ".join(f"{name} {state.down[name].held}: {state.down[name].why}"
                       for name in held)
    people = [name for name in held if state.down[name].held not in _SESSION_HELD]
    sessions = [name for name in held if name not in people]
    todo = ([f"resume one with `campaign senders resume {people[0]} --reason TEXT`"]
            if people else [])
    todo += [f"reconnect {sessions[0]} with `campaign sessions qr {sessions[0]}` and scan "
             "the QR code with its phone"] if sessions else []
    said = " or ".join(todo)
    return (f"nothing can be sent: every sender is held back ({causes}); the run waits. "
            f"{said[:1].upper()}{said[1:]}")


def _not_connected_line(state: BarState, down: list[str]) -> str:
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


def _throttled_line(state: BarState) -> str | None:
    parts = [f"sender {name} throttled to {share} of its rate ({why})"
             for name, (share, why) in state.throttled.items()
             if name not in state.down]
    if not parts:
        return None
    return ("; ".join(parts) + ": the other senders take a larger share; it speeds up "
            "again step by step while its signals stay good")


def _warming_line(state: BarState) -> str | None:
    said = [what for name, what in state.warming.items() if name not in state.down]
    return " · ".join(said) if said else None


def _caps_line(state: BarState, now: datetime) -> str | None:
    lines = describe_caps(state.capped.values(), state.zone, now,
                          senders=len(state.senders) or 1)
    return "\n".join(lines) if lines else None


def waiting_line(state: BarState, now: datetime) -> str | None:
    """Why the run is not sending at full pace right now, and what to do; ``None`` when
    nothing holds it back. The most blocking reason first: the window, then a crash's
    verification, then senders held or whose session is not connected, then senders at
    their daily cap or plan limit, then throttled senders and senders warming up."""
    lines = [line for line in (_window_line(state, now), _verifying_line(state, now),
                               _senders_line(state, now), _caps_line(state, now),
                               _throttled_line(state), _warming_line(state)) if line]
    return "\n".join(lines) if lines else None
