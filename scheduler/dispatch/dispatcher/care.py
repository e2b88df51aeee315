"""Sender care: each sender's profile, warm-up cap and health, applied to the run's pool.

At the start every sender of the run gets its profile (made when new: ``warming`` when it
has a warm-up ramp, else ``healthy``), its warm-up day for today (advanced once a day it
sent while healthy; day 1 again after an idle spell) and, while on the ramp, today's cap,
counted over every run and worker in the claim's transaction. At each control poll the
profiles are read again, so a person's pause, resume or retire (``campaign senders``) and
another worker's verdicts take effect within half a second. Every :data:`HEALTH_EVERY_S`
(and :data:`TROUBLE_JUDGED_AFTER_S` after a 429 or a server error) the service's signals
are scored (:mod:`scheduler.dispatch.health`) and a sender is throttled, paused or
restored, with the reason in its history and on the timeline. A session's
``connection.status`` disconnected or logged out holds its sender until it connects
again. Without a ``SenderCare`` in the setup none of this happens.
"""

from __future__ import annotations

from collections import deque
from datetime import datetime, timedelta

from scheduler.dispatch import health, warmup
from scheduler.dispatch.dispatcher.run_state import RunContext, RunState
from scheduler.dispatch.senders import SenderState
from scheduler.ledger.rows import SenderProfileRow
from scheduler.ledger.states import HELD_STATES, ChangeSource, SenderStatus
from scheduler.settings.senders import SenderCare, WarmupProfile

#: How often (seconds of the run's clock) the senders' health is judged.
HEALTH_EVERY_S = 60.0
#: How long a 429 or a server error counts against its sender (the service's signals are
#: about now: a storm an hour ago says nothing of the sender's rate today).
SERVICE_WINDOW_S = 900.0
#: How soon it is judged after new trouble (a 429, a server error): soon, not at once, so
#: one judgement sees a burst whole.
TROUBLE_JUDGED_AFTER_S = 5.0
#: Session statuses that hold a sender, and its state while they last.
_SESSION_HOLDS = {"logged_out": SenderStatus.LOGGED_OUT,
                  "disconnected": SenderStatus.DISCONNECTED}


class SenderHealth:
    """Apply each sender's profile, warm-up and health to the run's pool (see the module)."""

    def __init__(self, ctx: RunContext, state: RunState, care: SenderCare) -> None:
        self.ctx = ctx
        self.state = state
        self.care = care
        self._ramps: dict[str, WarmupProfile | None] = {
            name: care.ramp_of(name) for name in ctx.options.senders}
        self._caps: dict[str, tuple[datetime, int]] = {}
        self._profiles: dict[str, SenderProfileRow] = {}
        self._day: datetime | None = None
        self._next_health: datetime | None = None
        #: 429s and server errors seen by this process: (when, sender, signal).
        self.trouble: deque[tuple[datetime, str, str]] = deque()
        self._all_held_noted = False

    # ------------------------------------------------------------------ the day

    def start(self, now: datetime, day_start: datetime) -> None:
        """Profiles, warm-up caps and holds at the start of the dispatch."""
        store, names = self.ctx.stores.senders, list(self.ctx.options.senders)
        warming = [n for n in names if self._ramps.get(n) is not None]
        plain = [n for n in names if self._ramps.get(n) is None]
        found = store.sender_profiles(warming, now, new_state=SenderStatus.WARMING) \
            if warming else {}
        found.update(store.sender_profiles(plain, now, new_state=SenderStatus.HEALTHY)
                     if plain else {})
        self._profiles = found
        self._reconnected_since(now)
        self._new_day(now, day_start)
        self._next_health = now + timedelta(seconds=HEALTH_EVERY_S)
        for profile in found.values():
            self._apply(profile, now, announce=profile.state in HELD_STATES)

    def _reconnected_since(self, now: datetime) -> None:
        """A sender a session status held (an earlier run saw it log out) whose session
        has said ``connected`` since: free again (the run's own poll sees only the
        statuses after its start)."""
        for name, profile in list(self._profiles.items()):
            if profile.state not in _SESSION_HOLDS.values():
                continue
            latest = self.ctx.stores.senders.session_statuses([name], profile.since).get(name)
            if latest is not None and latest.status == "connected":
                self.on_session(name, "connected", now)

    def _new_day(self, now: datetime, day_start: datetime) -> None:
        """Today's warm-up day and cap of every sender on a ramp. The day is advanced in
        the ledger once per date (whichever run or worker comes first); every run then
        reads the stored day, so all of them count the same cap."""
        self._day = day_start
        store = self.ctx.stores.senders
        today = day_start.date()
        names = list(self._profiles)
        self._profiles.update(store.read_sender_profiles(names))
        last = store.last_sends(names)
        for name, profile in self._profiles.items():
            ramp = self._ramps.get(name)
            if ramp is None:
                continue
            day = warmup.day_at(
                ramp, warm_day=profile.warm_day, warm_day_date=profile.warm_day_date,
                last_sent_at=last.get(name), at=now, tz=self.ctx.zone,
                healthy=profile.state in (SenderStatus.WARMING, SenderStatus.HEALTHY))
            if profile.warm_day_date is None or today > profile.warm_day_date:
                store.advance_warm_day(name, today, day)
        self._profiles.update(store.read_sender_profiles(names))
        self._caps.clear()
        for name, profile in self._profiles.items():
            self._cap_today(name, profile, day_start, now)

    def _cap_today(self, name: str, profile: SenderProfileRow, day_start: datetime,
                   now: datetime) -> None:
        pool = self.state.pool
        assert pool is not None
        ramp = self._ramps.get(name)
        day = profile.warm_day
        warming = warmup.is_warming(ramp, day)
        pool.senders[name].pace.daily.cap = (
            warmup.cap_for_day(ramp, day, self.ctx.options.daily_cap) if ramp is not None
            else self.ctx.options.daily_cap)
        if not warming:
            if profile.state == SenderStatus.WARMING:
                self._change(name, SenderStatus.HEALTHY, "warm-up done" if ramp is not None
                             else "no warm-up ramp", now)
            return
        assert ramp is not None
        cap = pool.senders[name].pace.daily.cap
        if cap is not None:
            self._caps[name] = (day_start, cap)
        if profile.state == SenderStatus.HEALTHY:
            self._change(name, SenderStatus.WARMING,
                         f"warm-up: day {day} of {ramp.days}", now)
        self.state.note(now, warmup.describe(name, ramp, day, cap), kind="warming",
                        sender=name)

    def claim_caps(self) -> dict[str, tuple[datetime, int]]:
        """Senders on their ramp: (start of today, today's cap), for the claim's count."""
        return self._caps

    # ------------------------------------------------------------------ the poll

    def poll(self, now: datetime, day_start: datetime) -> None:
        """Follow profiles changed elsewhere; a new day's caps; the health, when due."""
        if day_start != self._day:
            self._new_day(now, day_start)
        stored = self.ctx.stores.senders.read_sender_profiles(list(self._profiles))
        for name, profile in stored.items():
            before = self._profiles.get(name)
            self._profiles[name] = profile
            if before is None or (before.state, before.reason, before.throttle) != (
                    profile.state, profile.reason, profile.throttle):
                self._apply(profile, now, announce=True)
        if self._next_health is not None and now >= self._next_health:
            self._next_health = now + timedelta(seconds=HEALTH_EVERY_S)
            self._judge(now)
        self._say_if_all_held(now)

    def on_answers(self, trouble: list[tuple[str, str]], now: datetime) -> None:
        """429s and server errors of the latest answers: (sender, signal) each; the health
        is judged soon after (:data:`TROUBLE_JUDGED_AFTER_S`)."""
        self.trouble.extend((now, sender, signal) for sender, signal in trouble)
        soon = now + timedelta(seconds=TROUBLE_JUDGED_AFTER_S)
        if trouble and (self._next_health is None or soon < self._next_health):
            self._next_health = soon

    def on_session(self, name: str, status: str, now: datetime) -> None:
        """A session's ``connection.status``: logged out holds its sender; connected frees
        a sender that a status held."""
        held = _SESSION_HOLDS.get(status)
        profile = self._profiles.get(name)
        if held is not None:
            self._change(name, held, f"its session is {status} (connection.status)", now,
                         source=ChangeSource.EVENT)
        elif status == "connected" and profile is not None and \
                profile.state in _SESSION_HOLDS.values():
            back = SenderStatus.WARMING if name in self._caps else SenderStatus.HEALTHY
            self._change(name, back, "its session is connected again", now,
                         source=ChangeSource.EVENT)

    # ------------------------------------------------------------------ health

    def _judge(self, now: datetime) -> None:
        since = now - timedelta(seconds=self.care.window_s())
        recent = now - timedelta(seconds=SERVICE_WINDOW_S)
        while self.trouble and self.trouble[0][0] < recent:
            self.trouble.popleft()
        counted = self.ctx.stores.senders.sender_signals(
            list(self._profiles), since, now - timedelta(seconds=self.care.undelivered_s()))
        # without a receiver no receipt can come: "never confirmed" and "never delivered"
        # say nothing of the number then, and are left out
        events = self.ctx.setup.events_received
        for name, profile in self._profiles.items():
            seen = counted.get(name)
            mine = [signal for _at, sender, signal in self.trouble if sender == name]
            signals = health.Signals(
                sends=seen.sends if seen else 0, rate_limited=mine.count("rate_limited"),
                server_errors=mine.count("server_errors"),
                refused=seen.refused if seen else 0,
                never_sent=seen.never_sent if seen and events else 0,
                undelivered=seen.undelivered if seen and events else 0,
                opt_outs=seen.opt_outs if seen else 0, replies=seen.replies if seen else 0)
            verdict = health.judge(profile.state, profile.throttle, signals,
                                   warming=name in self._caps)
            if not self.care.health or profile.state in HELD_STATES:
                # observe and record only (health off), or held: only a person or a
                # reconnection moves it, and its reason stays
                self.ctx.stores.senders.change_sender_state(
                    name, profile.state, profile.reason, now, source=ChangeSource.ENGINE,
                    score=verdict.score)
                continue
            self._change(name, verdict.state, verdict.reason, now, score=verdict.score,
                         throttle=verdict.factor if verdict.factor > 0 else None)

    # ------------------------------------------------------------------ changes

    def _change(self, name: str, to: str, reason: str | None, now: datetime, *,
                source: str = ChangeSource.ENGINE, score: float | None = None,
                throttle: float | None = None) -> None:
        store = self.ctx.stores.senders
        if store.change_sender_state(name, to, reason, now, source=source, score=score,
                                     throttle=throttle) or throttle is not None:
            profiles = store.read_sender_profiles([name])
            if name in profiles:
                self._profiles[name] = profiles[name]
                self._apply(profiles[name], now, announce=True)

    def _apply(self, profile: SenderProfileRow, now: datetime, *, announce: bool) -> None:
        """Give the pool the sender's state: held back, throttled, or free."""
        pool = self.state.pool
        assert pool is not None
        sender = pool.senders.get(profile.sender)
        if sender is None:
            return
        held = profile.state in HELD_STATES
        was_held, was_care = sender.held_reason, sender.care
        sender.held_reason = _held_reason(profile) if held else None
        sender.care = 1.0 if held else max(0.0, min(1.0, profile.throttle or 1.0))
        sender.set_rate()
        if not announce:
            return
        if held and was_held != sender.held_reason:
            self.state.note(now, f"sender {profile.sender} {profile.state}: "
                            f"{profile.reason or 'no reason given'}; no sends through it",
                            kind="sender_down", sender=profile.sender, why=profile.reason,
                            state=str(profile.state))
            self._all_held_noted = False
        elif not held and was_held is not None:
            self.state.note(now, f"sender {profile.sender} back in rotation "
                            f"({profile.state}: {profile.reason or 'resumed'})",
                            kind="sender_up", sender=profile.sender)
        elif not held and sender.care != was_care:
            self._say_throttle(sender, profile, now)

    def _say_throttle(self, sender: SenderState, profile: SenderProfileRow,
                      now: datetime) -> None:
        if sender.care < 1.0:
            self.state.note(now, f"sender {sender.name} throttled to "
                            f"{sender.care:.0%} of its rate: {profile.reason}",
                            kind="sender_throttled", sender=sender.name, why=profile.reason)
        else:
            self.state.note(now, f"sender {sender.name} back to full speed",
                            kind="sender_up", sender=sender.name)

    def _say_if_all_held(self, now: datetime) -> None:
        pool = self.state.pool
        if pool is None or self._all_held_noted:
            return
        held = [s for s in pool.senders.values() if s.held_reason is not None]
        if held and len(held) == len(pool.senders):
            causes = "; ".join(f"{s.name} {s.held_reason}" for s in held)
            self.state.note(now, f"every sender is held back ({causes}): the run waits; "
                            "resume one with `campaign senders resume ID --reason TEXT`, "
                            "or reconnect its session", kind="senders_held")
            self._all_held_noted = True


def _held_reason(profile: SenderProfileRow) -> str:
    return f"{profile.state}: {profile.reason}" if profile.reason else str(profile.state)


__all__ = ["HEALTH_EVERY_S", "SenderHealth"]
