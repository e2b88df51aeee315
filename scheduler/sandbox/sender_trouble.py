"""Per-session trouble: rate-limit storms, logouts and sends that are never delivered.

The rules are ``SandboxConfig`` fields (:mod:`scheduler.sandbox.trouble_rules`), read at each
send, so a test can set them before a run or in the middle of one. What each session went
through is kept here and shown at ``GET /sandbox/trouble``:

- **storm**: checked before a send is accepted (after the session and plan-limit checks,
  before the random faults): once ``after_sends`` sends were accepted since the sandbox
  started or the last storm ended (within ``window_s`` when set), every send is answered 429
  with ``Retry-After`` until the storm is over; without ``repeat`` a session has one storm.
- **logout**: checked after each accepted send; the session is logged out exactly as
  ``POST /sandbox/sessions/{id}/logout`` does (record ``disconnected`` with a new QR code,
  ``connection.status`` ``logged_out``), so its next sends are refused with 409 until
  someone links it again. A rule fires once per session.
- **never delivered**: each accepted send of the session is drawn (from its own seeded
  stream, ``"{seed}:never-delivered:{sessionId}"``, in the session's arrival order) to be
  lost: it keeps its answer and its ``messages.sent``, but its recipient never acts (no
  receipt, no reply, no vote).

Everything is on the sandbox clock (``config.clock``) and counted in arrival order.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from random import Random
from typing import TYPE_CHECKING, Any

from scheduler.sandbox.common import ApiError, iso_ms, seeded
from scheduler.sandbox.trouble_rules import MAX_WINDOW_SENDS, RateLimitStorm, rule_for

if TYPE_CHECKING:
    from scheduler.sandbox.recipients import Recipients
    from scheduler.sandbox.state import Session
    from scheduler.sandbox.world_view import WorldView

STORM_ERROR = "Too many requests, slow down (sandbox rate-limit storm)"


@dataclass
class Storm:
    """One rate-limit storm of a session: when it began and how it ends."""

    started_at: datetime
    until: datetime | None = None
    left: int | None = None
    answered: int = 0
    ended_at: datetime | None = None

    def record(self) -> dict[str, Any]:
        """The storm as ``/sandbox/trouble`` shows it."""
        return {
            "startedAt": iso_ms(self.started_at),
            "until": iso_ms(self.until) if self.until is not None else None,
            "endedAt": iso_ms(self.ended_at) if self.ended_at is not None else None,
            "answered429": self.answered,
        }


@dataclass
class SessionTrouble:
    """What one session went through: sends, opt-outs, storms, logout, lost sends."""

    session_id: str
    accepted: int = 0
    opt_outs: int = 0
    #: Times of the latest accepted sends (for the rules' windows).
    recent: deque[datetime] = field(default_factory=lambda: deque(maxlen=MAX_WINDOW_SENDS))
    #: ``accepted`` when the latest storm ended (sends before it do not count to the next).
    storm_base: int = 0
    storms: list[Storm] = field(default_factory=list)
    logged_out_at: datetime | None = None
    logout_reason: str | None = None
    never_delivered: list[str] = field(default_factory=list)
    lost: Random | None = None

    @property
    def storm(self) -> Storm | None:
        """The storm in progress, if any."""
        if self.storms and self.storms[-1].ended_at is None:
            return self.storms[-1]
        return None

    def sends_within(self, count: int, window_s: float | None, since: int, now: datetime) -> bool:
        """Whether ``count`` sends were accepted after the first ``since`` (and, with a
        window, all of the latest ``count`` within ``window_s`` seconds before ``now``)."""
        if self.accepted - since < count:
            return False
        if window_s is None:
            return True
        return self.recent[-count] >= now - timedelta(seconds=window_s)

    def record(self) -> dict[str, Any]:
        """The session's trouble as ``/sandbox/trouble`` shows it."""
        storm = self.storm
        return {
            "accepted": self.accepted,
            "optOuts": self.opt_outs,
            "inStorm": storm is not None,
            "storms": [s.record() for s in self.storms],
            "loggedOutAt": iso_ms(self.logged_out_at) if self.logged_out_at else None,
            "logoutReason": self.logout_reason,
            "neverDelivered": list(self.never_delivered),
        }


class SenderTrouble:
    """The sandbox's per-session trouble: storms before a send, logout and lost sends after."""

    def __init__(self, sandbox: WorldView, recipients: Recipients, seed: int | None) -> None:
        self._sandbox = sandbox
        self._recipients = recipients
        self._seed = seed
        self.sessions: dict[str, SessionTrouble] = {}

    def _of(self, session_id: str) -> SessionTrouble:
        state = self.sessions.get(session_id)
        if state is None:
            state = self.sessions[session_id] = SessionTrouble(session_id)
        return state

    # ------------------------------------------------------------------ before a send

    def check_storm(self, session: Session) -> None:
        """Raise 429 with ``Retry-After`` when the session is in a storm, or one begins now."""
        rule = rule_for(self._sandbox.config.rate_limit_storm, session.session_id)
        state = self.sessions.get(session.session_id)
        if rule is None or state is None:
            return  # no rule, or not a single send accepted yet: no storm
        now = self._sandbox.now()
        storm = state.storm
        if storm is not None and storm.until is not None and now >= storm.until:
            self._end(state, storm, storm.until)
            storm = None
        if storm is None:
            if state.storms and not rule.repeat:
                return
            if not state.sends_within(rule.after_sends, rule.window_s, state.storm_base, now):
                return
            storm = Storm(started_at=now, left=rule.for_requests)
            if rule.for_s is not None:
                storm.until = now + timedelta(seconds=rule.for_s)
            state.storms.append(storm)
        self._answer_429(state, storm, rule, now)

    def _answer_429(self, state: SessionTrouble, storm: Storm, rule: RateLimitStorm,
                    now: datetime) -> None:
        storm.answered += 1
        if storm.until is not None:
            wait = max(1, math.ceil((storm.until - now).total_seconds()))
        else:
            wait = 1
            storm.left = (storm.left or 1) - 1
            if storm.left <= 0:
                self._end(state, storm, now)
        if rule.retry_after_s is not None:
            wait = rule.retry_after_s
        raise ApiError(429, STORM_ERROR, headers={"Retry-After": str(wait)})

    @staticmethod
    def _end(state: SessionTrouble, storm: Storm, at: datetime) -> None:
        storm.ended_at = at
        state.storm_base = state.accepted

    # ------------------------------------------------------------------ after a send

    def accepted(self, session: Session, kind: str, to: str, event_id: str, body: Any,
                 message_id: str) -> None:
        """An accepted send (its ``messages.sent`` already emitted): its recipient acts
        unless the send is lost; then the session may be logged out."""
        sandbox = self._sandbox
        cfg = sandbox.config
        sid = session.session_id
        state = self._of(sid)
        now = sandbox.now()
        state.accepted += 1
        state.recent.append(now)
        share = rule_for(cfg.never_delivered, sid) or 0.0
        if share > 0 and self._lost_stream(state).random() < share:
            state.never_delivered.append(message_id)
        else:
            replies = self._recipients.replies
            before = len(replies)
            self._recipients.after_send(session, kind, to, event_id, body)
            state.opt_outs += sum(1 for reply in replies[before:] if reply["optOut"])
        reason = self._logout_reason(state, now)
        if reason is not None:
            state.logged_out_at = now
            state.logout_reason = reason
            sandbox.logout(sid)

    def _lost_stream(self, state: SessionTrouble) -> Random:
        if state.lost is None:
            state.lost = seeded(self._seed, f"never-delivered:{state.session_id}")
        return state.lost

    def _logout_reason(self, state: SessionTrouble, now: datetime) -> str | None:
        """Why the session is logged out after this send (None: it is not)."""
        rule = rule_for(self._sandbox.config.logout_after, state.session_id)
        if rule is None or state.logged_out_at is not None:
            return None
        if rule.sends is not None and state.sends_within(rule.sends, rule.window_s, 0, now):
            within = f" within {rule.window_s:g} s" if rule.window_s is not None else ""
            return f"{rule.sends} sends{within}"
        ratio = rule.opt_out_ratio
        if (ratio is not None and state.accepted >= rule.min_sends
                and state.opt_outs >= ratio * state.accepted):
            return (f"opt-out ratio {state.opt_outs}/{state.accepted} reached {ratio:g} "
                    f"(after at least {rule.min_sends} sends)")
        return None

    # ------------------------------------------------------------------ inspection

    def report(self, session_id: str | None = None) -> dict[str, Any]:
        """Every session's trouble (or one session's), keyed by session id."""
        return {
            sid: state.record()
            for sid, state in self.sessions.items()
            if session_id is None or sid == session_id
        }
