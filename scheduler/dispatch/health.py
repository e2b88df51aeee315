"""A sender's health: a score from the service's signals, and what it makes the engine do.

The signals are counted per sender over its recent sends (the window the caller chose):
429s, server errors and time-outs, sends the service refused, sends whose
``messages.sent`` never came, sends never delivered within a set time, opt-outs (and other
complaints) and replies. Each is a rate per send; the score starts at 100 and loses
``weight × rate`` per signal (replies add a little back):

==================  ======  =====================================================
signal              weight  e.g.
==================  ======  =====================================================
opt-outs            1000    1 % of sends opting out costs 10 points, 5 % costs 50
never sent           200    5 % of sends with no ``messages.sent`` cost 10
429s                 150    10 % of sends answered 429 cost 15
undelivered           80    25 % never delivered cost 20
server errors        100    5xx and time-outs: 10 % cost 10
refused sends         60    the service refused 10 % (bad numbers…): 6
replies              -50    replies give back up to 10 points
==================  ======  =====================================================

429s and server errors say as much about the service as about the number: together they
cost at most :data:`SERVICE_SIGNALS_MAX` points, so they can throttle a sender but never
pause it alone. With fewer than :data:`MIN_SENDS` sends the rates are taken over
:data:`MIN_SENDS` (50), so one opt-out among the first sends costs 20 points, not a
pause; it takes four before the sender's 50th send to pause it. 429s and server errors are
taken over at least :data:`MIN_SENDS_SERVICE` (10): the service asks to slow down at once.
Thresholds: a score below :data:`THROTTLE_BELOW` (70) throttles the sender (its rate × a
factor between 1 and :data:`MIN_FACTOR`, lower as the score falls), below
:data:`PAUSE_BELOW` (40) pauses it (no more sends until a person resumes it). A throttled
sender recovers step by step: its factor rises by :data:`RECOVERY_STEP` at each judgement
with a better score, never in one jump. These are community practice for bulk senders,
not the service's own rules and not a guarantee that a number is safe.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.ledger.states import SenderStatus

#: Sends below which rates are taken over this many sends (few sends say little).
MIN_SENDS = 50
#: The same floor for the service's own signals (a 429 says "slow down" at once).
MIN_SENDS_SERVICE = 10
#: A score below this throttles the sender.
THROTTLE_BELOW = 70.0
#: A score below this pauses the sender.
PAUSE_BELOW = 40.0
#: The slowest a throttled sender goes: its rate times this.
MIN_FACTOR = 0.25
#: How much a throttled sender's factor may rise at one judgement.
RECOVERY_STEP = 0.15

#: The most points 429s and server errors may cost together (they cannot pause alone).
SERVICE_SIGNALS_MAX = 55.0
#: The signals of the service rather than of the number.
_SERVICE_SIGNALS = ("rate_limited", "server_errors")
#: Points lost per unit of each rate (see the module's table).
WEIGHTS = {
    "opt_outs": 1000.0, "never_sent": 200.0, "rate_limited": 150.0, "undelivered": 80.0,
    "server_errors": 100.0, "refused": 60.0,
}
#: Points given back per unit of the reply rate, and at most.
REPLY_WEIGHT, REPLY_BONUS_MAX = 50.0, 10.0

#: What each signal is called in a reason.
_WORDS = {
    "opt_outs": "opt-outs", "never_sent": "sends never confirmed", "rate_limited": "429s",
    "undelivered": "sends never delivered", "server_errors": "server errors and time-outs",
    "refused": "refused sends",
}


@dataclass(frozen=True)
class Signals:
    """What the service said of a sender's recent sends (counts over one window)."""

    sends: int = 0
    rate_limited: int = 0
    server_errors: int = 0
    refused: int = 0
    never_sent: int = 0
    undelivered: int = 0
    opt_outs: int = 0
    replies: int = 0

    def rate(self, name: str) -> float:
        """``name``'s count per send (over at least :data:`MIN_SENDS`, or
        :data:`MIN_SENDS_SERVICE` for 429s and server errors)."""
        count: int = getattr(self, name)
        floor = MIN_SENDS_SERVICE if name in _SERVICE_SIGNALS else MIN_SENDS
        return count / max(self.sends, floor)


def penalties(signals: Signals) -> dict[str, float]:
    """Points each signal costs (the score is 100 less these, plus the reply bonus); the
    service's signals are scaled down together to :data:`SERVICE_SIGNALS_MAX`."""
    costs = {name: weight * signals.rate(name) for name, weight in WEIGHTS.items()}
    service = sum(costs[name] for name in _SERVICE_SIGNALS)
    if service > SERVICE_SIGNALS_MAX:
        for name in _SERVICE_SIGNALS:
            costs[name] *= SERVICE_SIGNALS_MAX / service
    return costs


def score(signals: Signals) -> float:
    """The sender's health, 0 (worst) to 100 (no trouble seen)."""
    bonus = min(REPLY_BONUS_MAX, REPLY_WEIGHT * signals.rate("replies"))
    return max(0.0, min(100.0, 100.0 - sum(penalties(signals).values()) + bonus))


def factor_for(value: float) -> float:
    """The rate factor a score calls for: 1 at :data:`THROTTLE_BELOW` and above, falling
    linearly to :data:`MIN_FACTOR` at :data:`PAUSE_BELOW`."""
    if value >= THROTTLE_BELOW:
        return 1.0
    span = (value - PAUSE_BELOW) / (THROTTLE_BELOW - PAUSE_BELOW)
    return max(MIN_FACTOR, MIN_FACTOR + (1.0 - MIN_FACTOR) * span)


def why(signals: Signals, value: float) -> str:
    """The main causes of a low score, in words: ``score 35: opt-outs 4.0% of 50 sends``."""
    worst = sorted(((cost, name) for name, cost in penalties(signals).items() if cost >= 1.0),
                   reverse=True)[:2]
    causes = ", ".join(f"{_WORDS[name]} {100 * getattr(signals, name) / max(signals.sends, 1):.1f}%"
                       for _cost, name in worst)
    return f"score {value:.0f}: {causes or 'no single cause'} of {signals.sends} sends"


@dataclass(frozen=True)
class Judgement:
    """What the rules make of a sender: its state, its rate factor and why."""

    state: str
    factor: float
    reason: str | None
    score: float


def judge(current: str, current_factor: float, signals: Signals, *,
          warming: bool) -> Judgement:
    """The sender's next state from its current one and its signals.

    A sender a person paused or retired, or whose session is disconnected or logged out,
    stays so (only a person, or a reconnection, brings it back: not the score). Otherwise
    a score below :data:`PAUSE_BELOW` pauses it, below :data:`THROTTLE_BELOW` throttles it
    (its factor falls at once, rises by at most :data:`RECOVERY_STEP`), else it is healthy
    (``warming`` while on its warm-up ramp) once its factor is back to 1.
    """
    value = score(signals)
    if current in (SenderStatus.PAUSED, SenderStatus.RETIRED, SenderStatus.DISCONNECTED,
                   SenderStatus.LOGGED_OUT):
        return Judgement(current, 0.0, None, value)
    if value < PAUSE_BELOW:
        return Judgement(SenderStatus.PAUSED, 0.0, why(signals, value), value)
    target = factor_for(value)
    factor = target if target <= current_factor else min(target,
                                                         current_factor + RECOVERY_STEP)
    if factor < 1.0:
        return Judgement(SenderStatus.THROTTLED, factor, why(signals, value), value)
    return Judgement(SenderStatus.WARMING if warming else SenderStatus.HEALTHY, 1.0, None,
                     value)


__all__ = ["Judgement", "Signals", "factor_for", "judge", "penalties", "score", "why"]
