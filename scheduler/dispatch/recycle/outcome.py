"""What a watched row's outcome was, per channel, in a rule's terms and in plain words (pure).

:func:`classify` reads a :class:`~scheduler.ledger.rows.WatchedRow` as a retry rule sees it;
each channel reads its own rows (``outcome`` in :mod:`scheduler.dispatch.channels`):

- voice: an answered call that ended is ``reached`` when it lasted ``min_talk`` (or there
  is no ``min_talk``), else ``no_answer`` (too short); an unanswered call that ended is
  ``busy`` (Q.850 cause 17), ``no_answer`` (19 no answer, 150 ring time-out, 151
  voicemail) or ``failed`` (any other cause, e.g. 21 rejected); a call not ended yet is
  ``pending``;
- sms: ``delivered`` is reached, ``undelivered`` carries the report's ``errorCode``
  (INVALID_NUMBER and BLACKLIST also rule out a fallback: the number is wrong, or its
  owner is on the operator's block list), ``accepted`` / ``sent`` are pending;
- calls (WhatsApp calls): ``answered`` is reached, ``not_answered`` is not;
- whatsapp messages: delivered or read is reached for ``when = "not_delivered"``, read
  only for ``"not_read"``; anything else is ``not_reached`` (only ``[fallback]`` acts on it);
- on every channel, ``failed`` (the service refused the send) and ``unknown`` (the send
  may or may not have been taken) are never retried by a rule: the dispatcher already
  retried what a retry could fix; they may fall back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from scheduler.ledger.rows import WatchedRow
from scheduler.ledger.states import DeliveryState as S

#: Outcome kinds that are not a rule's outcome.
REACHED, PENDING, NOT_REACHED, REFUSED, UNKNOWN = (
    "reached", "pending", "not_reached", "refused", "unknown")


@dataclass(frozen=True, slots=True)
class Outcome:
    """A row's outcome: ``kind`` is a rule's outcome name (``no_answer``, ``busy``,
    ``failed``, ``undelivered``, ``not_answered``) or one of ``reached``, ``pending``,
    ``not_reached``, ``refused``, ``unknown``; ``said`` is it in plain words."""

    kind: str
    said: str
    #: SMS: the report's error code (upper case), if any.
    code: str | None = None
    #: Whether another channel may still be tried (False: an invalid or blocked number).
    may_fall_back: bool = True
    #: Voice: answered, but shorter than ``min_talk`` (``no_answer`` by the rules; its
    #: next attempt records :data:`SHORT_CALL` as what made it).
    short: bool = False

    @property
    def reached(self) -> bool:
        """Whether the recipient was reached."""
        return self.kind == REACHED


class ReadsOutcomes(Protocol):
    """A channel as the retry rules see it: it reads a watched row's outcome."""

    def outcome(self, row: WatchedRow, *, min_talk_s: float | None,
                when: str | None) -> Outcome:
        """The outcome of ``row`` once sent and neither refused nor unknown."""


def classify(row: WatchedRow, channel: ReadsOutcomes, *, min_talk_s: float | None = None,
             when: str | None = None) -> Outcome:
    """The outcome of ``row`` (a row of a run on ``channel``): ``min_talk_s`` is the voice
    step's shortest talk that counts as reached, ``when`` the fallback's condition
    (WhatsApp). Refused and unknown sends read the same on every channel; the rest is the
    channel's (``outcome`` of each module of :mod:`scheduler.dispatch.channels`)."""
    if row.state == S.FAILED:
        return Outcome(REFUSED, "the service refused the send")
    if row.state == S.UNKNOWN:
        return Outcome(UNKNOWN, "not known whether the service took the send")
    return channel.outcome(row, min_talk_s=min_talk_s, when=when)
