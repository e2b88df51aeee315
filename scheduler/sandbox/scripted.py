"""Scripted outcomes per number, for tests: what each call or SMS to a given number does,
in order, instead of a seeded draw; and WhatsApp numbers that never get a message.

Three ``SandboxConfig`` settings (all run-time knobs; keys are numbers, compared by their
digits only, so ``"+55 11 98888-7777"`` and ``"5511988887777"`` are one number):

- ``voice_outcomes_by_number``: ``{number: [outcome, ...]}``, one entry per call to that
  number in the order the calls arrive (the last entry repeats): ``no_answer`` (Q.850 19),
  ``busy`` (17), ``failed`` (21, rejected), ``voicemail`` (151), ``ring_timeout`` (150),
  ``answered``, ``answered:<talk seconds>`` or ``answered:<talk seconds>:<keys>`` (keys
  pressed in an IVR flow, e.g. ``answered:4:9``). A scripted call is one dial: the service's
  own redials (``maxAttempts``) are not played.
- ``sms_outcomes_by_number``: ``{number: [outcome, ...]}``, one entry per SMS to that number:
  ``delivered``, ``expired``, an error code (``NETWORK_ERROR``: ``undelivered`` with that
  code) or ``failed:<ERROR_CODE>``.
- ``whatsapp_undelivered_numbers``: numbers whose WhatsApp messages are accepted (an id, a
  ``messages.sent``) but never delivered, read or answered.
- ``whatsapp_replies_by_number``: ``{number: [reply, ...]}``, one entry per WhatsApp message
  sent to that number, in the order they are sent: ``null`` (no reply to that message) or
  ``{"text": "1", "after_s": 2.5}`` (a ``messages.received`` quoting the message, ``after_s``
  seconds after it was taken; ``text`` may be ``"SAIR"``, an opt-out word). Messages past
  the list get no reply. A listed number's messages are delivered and read (after
  ``recipient_delay_ms``) and get no drawn reply: its replies are the script's only.

Scripted numbers take no draw from the seeded streams.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

#: Unanswered scripted outcomes and the Q.850 cause each ends with.
UNANSWERED: dict[str, int] = {
    "busy": 17,
    "no_answer": 19,
    "failed": 21,
    "ring_timeout": 150,
    "voicemail": 151,
}
_ANSWERED = re.compile(r"^answered(?::(\d{1,5})(?::([0-9*#]{1,10}))?)?$")
SMS_FINAL = ("delivered", "expired")


def digits(number: str) -> str:
    """The digits of a number: how scripted numbers are compared."""
    return "".join(ch for ch in number if ch.isdigit())


def _voice_outcome(text: str) -> str:
    if text in UNANSWERED or _ANSWERED.match(text):
        return text
    raise ValueError(
        f"{text!r} is not a call outcome: use one of {', '.join(UNANSWERED)}, answered, "
        "answered:<talk seconds> or answered:<talk seconds>:<keys>")


def _sms_outcome(text: str) -> str:
    # the service's event models come with the error codes: imported when an SMS script is
    # read, not with the configuration (``campaign senders`` reads it; issue 32)
    from scheduler.service.account_events import SMS_ERROR_CODES

    code = text.removeprefix("failed:")
    if text in SMS_FINAL or code in SMS_ERROR_CODES:
        return text
    raise ValueError(
        f"{text!r} is not an SMS outcome: use delivered, expired, an error code "
        f"({', '.join(sorted(SMS_ERROR_CODES))}) or failed:<error code>")


def _by_digits(scripts: dict[str, list[Any]]) -> dict[str, list[Any]]:
    keyed: dict[str, list[Any]] = {}
    for number, outcomes in scripts.items():
        key = digits(number)
        if not key:
            raise ValueError(f"{number!r} is not a phone number")
        keyed[key] = outcomes
    return keyed


def _numbers(numbers: list[str]) -> list[str]:
    keyed = [digits(number) for number in numbers]
    bad = [number for number, key in zip(numbers, keyed, strict=True) if not key]
    if bad:
        raise ValueError(f"{bad[0]!r} is not a phone number")
    return keyed


VoiceOutcome = Annotated[str, AfterValidator(_voice_outcome)]
SmsOutcome = Annotated[str, AfterValidator(_sms_outcome)]
#: ``voice_outcomes_by_number``: per number (digits), its calls' outcomes in order.
VoiceScripts = Annotated[
    dict[str, Annotated[list[VoiceOutcome], Field(min_length=1)]], AfterValidator(_by_digits)
]
#: ``sms_outcomes_by_number``: per number (digits), its messages' outcomes in order.
SmsScripts = Annotated[
    dict[str, Annotated[list[SmsOutcome], Field(min_length=1)]], AfterValidator(_by_digits)
]
#: ``whatsapp_undelivered_numbers``: numbers (digits) never delivered a WhatsApp message.
Numbers = Annotated[list[str], AfterValidator(_numbers)]


class ScriptedReply(BaseModel):
    """One scripted reply of ``whatsapp_replies_by_number``: its text and delay."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(min_length=1, max_length=4096)
    after_s: float = Field(default=0.0, ge=0, le=3600)


#: ``whatsapp_replies_by_number``: per number (digits), a reply (or none) per message.
ReplyScripts = Annotated[
    dict[str, Annotated[list[ScriptedReply | None], Field(min_length=1)]],
    AfterValidator(_by_digits),
]


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """One scripted call: answered (talk seconds or None for the default, keys) or not."""

    answered: bool
    cause: int
    talk_s: int | None = None
    keys: str = ""


def scripted_call(text: str) -> ScriptedCall:
    """The call an entry of ``voice_outcomes_by_number`` says."""
    if text in UNANSWERED:
        return ScriptedCall(False, UNANSWERED[text])
    found = _ANSWERED.match(text)
    assert found is not None, text  # validated by the config
    talk, keys = found.groups()
    return ScriptedCall(True, 16, int(talk) if talk is not None else None, keys or "")


def scripted_sms(text: str) -> tuple[str, str | None]:
    """The outcome and error code an entry of ``sms_outcomes_by_number`` says."""
    if text in SMS_FINAL:
        return text, None
    if text.startswith("failed:"):
        return "failed", text.removeprefix("failed:")
    return "undelivered", text


class Script:
    """Walks each number's scripted outcomes, one entry per send (the last repeats)."""

    __slots__ = ("_used",)

    def __init__(self) -> None:
        self._used: Counter[str] = Counter()

    def reply(self, scripts: dict[str, list[ScriptedReply | None]], number: str
              ) -> tuple[bool, ScriptedReply | None]:
        """(whether ``number`` is scripted, its reply to its next message: None for none;
        past the list, none)."""
        key = digits(number)
        entries = scripts.get(key)
        if not entries:
            return False, None
        n = self._used[key]
        self._used[key] = n + 1
        return True, entries[n] if n < len(entries) else None

    def next(self, scripts: dict[str, list[str]], number: str) -> str | None:
        """The next scripted outcome of ``number``; None when it has no script."""
        key = digits(number)
        outcomes = scripts.get(key)
        if not outcomes:
            return None
        n = self._used[key]
        self._used[key] = n + 1
        return outcomes[min(n, len(outcomes) - 1)]

