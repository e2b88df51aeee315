"""What a watched row's outcome was, per channel, in a rule's terms and in plain words (pure).

:func:`classify` reads a :class:`~scheduler.ledger.rows.WatchedRow` as a retry rule sees it:

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
from typing import Any

from scheduler.ledger.rows import WatchedRow
from scheduler.ledger.states import DeliveryState as S

#: Q.850 causes of an unanswered voice call, as the service reports them.
BUSY_CAUSES = frozenset({17})
NO_ANSWER_CAUSES = frozenset({19, 150, 151})
CAUSE_WORDS = {16: "normal clearing", 17: "busy", 18: "no response", 19: "no answer",
               21: "rejected", 27: "out of order", 34: "no circuit",
               150: "ring time-out", 151: "voicemail"}
#: SMS error codes after which no other channel is tried either.
NO_FALLBACK_SMS_CODES = frozenset({"INVALID_NUMBER", "BLACKLIST"})
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


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _cause(details: dict[str, Any]) -> tuple[int | None, str]:
    cause = _int(details.get("cause"))
    if cause is None:
        return None, "no cause reported"
    words = CAUSE_WORDS.get(cause) or str(details.get("causeDescription") or "").strip()
    return cause, f"{words[:40]}, cause {cause}" if words else f"cause {cause}"


def _voice(row: WatchedRow, min_talk_s: float | None) -> Outcome:
    if row.state == S.ANSWERED:
        talk = row.details.get("talkSeconds")
        if min_talk_s is None:
            return Outcome(REACHED, "answered")
        if row.ended_at is None:
            return Outcome(PENDING, "answered, still talking")
        if not isinstance(talk, int | float) or isinstance(talk, bool):
            return Outcome(REACHED, "answered (its length was not reported)")
        if talk >= min_talk_s:
            return Outcome(REACHED, f"answered for {_seconds(talk)}")
        return Outcome("no_answer", f"answered for {_seconds(talk)}, less than min_talk "
                                    f"{_seconds(min_talk_s)}: counted as not reached",
                       short=True)
    if row.state == S.NOT_ANSWERED:
        cause, words = _cause(row.details)
        if cause in BUSY_CAUSES:
            return Outcome("busy", f"busy (cause {cause})")
        if cause in NO_ANSWER_CAUSES:
            return Outcome("no_answer", f"not answered ({words})")
        return Outcome("failed", f"call failed ({words})")
    return Outcome(PENDING, "the call has not ended")


def _sms(row: WatchedRow) -> Outcome:
    if row.state in (S.DELIVERED, S.READ):
        return Outcome(REACHED, "SMS delivered")
    if row.state == S.UNDELIVERED:
        raw = row.details.get("errorCode")
        code = str(raw).strip().upper() if raw else None
        return Outcome("undelivered", f"SMS undelivered ({code or 'no error code'})", code,
                       may_fall_back=code not in NO_FALLBACK_SMS_CODES)
    return Outcome(PENDING, "no delivery report yet")


def _calls(row: WatchedRow) -> Outcome:
    if row.state == S.ANSWERED:
        return Outcome(REACHED, "WhatsApp call answered")
    if row.state == S.NOT_ANSWERED:
        return Outcome("not_answered", "WhatsApp call not answered")
    return Outcome(PENDING, "the WhatsApp call has not ended")


def _whatsapp(row: WatchedRow, when: str | None) -> Outcome:
    if row.state == S.READ or row.read_at is not None:
        return Outcome(REACHED, "read")
    delivered = row.state == S.DELIVERED or row.delivered_at is not None
    if when == "not_read":
        return Outcome(NOT_REACHED, "delivered, not read" if delivered else "not read")
    if delivered:
        return Outcome(REACHED, "delivered")
    return Outcome(NOT_REACHED, "not delivered")


def classify(row: WatchedRow, channel: str, *, min_talk_s: float | None = None,
             when: str | None = None) -> Outcome:
    """The outcome of ``row`` (a ``channel`` run's row): ``min_talk_s`` is the voice step's
    shortest talk that counts as reached, ``when`` the fallback's condition (WhatsApp)."""
    if row.state == S.FAILED:
        return Outcome(REFUSED, "the service refused the send")
    if row.state == S.UNKNOWN:
        return Outcome(UNKNOWN, "not known whether the service took the send")
    if channel == "voice":
        return _voice(row, min_talk_s)
    if channel == "sms":
        return _sms(row)
    if channel == "calls":
        return _calls(row)
    return _whatsapp(row, when)
