"""Channel extras kept in ``deliveries.details`` (JSON): which columns they give, and totals.

The tracking package stores what SMS and voice events carry, the dispatcher what a bulk
answer said. Keys are matched without case or underscores, so ``costMicroReais`` (as the
service spells it) and ``cost_micro_reais`` both work:

- SMS: ``segments`` (int), ``encoding`` (GSM-7 / UCS-2), ``costMicroReais`` (int,
  millionths of a real), ``errorCode``; ``segmentsCounted`` (our count, kept when the
  service's differed).
- Voice: ``answered`` (bool), ``talkSeconds`` (int), ``digits`` (keys pressed),
  ``cause`` (Q.850 code) and ``causeDescription``, ``callId``, ``bulkId``.
- WhatsApp answers: ``pollVote`` (the options voted), ``listRowId`` and ``listRowTitle``
  (the list row chosen), ``answeredAt``.
- WhatsApp calls (``calls`` runs): ``callId``, ``answered``, ``durationMs`` (the call's
  length), ``recordingUrl`` (``calls/stream``), ``reason`` (``hangup``, ``no_answer``),
  ``mode`` (place or stream).

Any other key is kept in an "Other details" column as JSON. A report on an SMS or voice
run always has that channel's columns (empty until events arrive); on other channels a
column appears only when some row carries its key. The scan also counts, per run, what the
channel charts show: SMS error codes of undelivered rows, voice outcomes of finished calls
("answered", "busy", "no answer", "voicemail" …) and the digits pressed in answered calls.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from scheduler.dispatch.channel import Channel
from scheduler.dispatch.channels import known_channel
from scheduler.service.account_models import cause_text

#: Normalised key → canonical name.
_KEYS = {
    "segments": "segments",
    "smssegments": "segments",
    "segmentscounted": "segments_counted",
    "encoding": "encoding",
    "costmicroreais": "cost_micro",
    "errorcode": "error_code",
    "answered": "answered",
    "talkseconds": "talk_seconds",
    "digits": "digits",
    "cause": "cause",
    "causedescription": "cause_description",
    "callid": "call_id",
    "bulkid": "bulk_id",
    "pollvote": "poll_vote",
    "listrowid": "list_row_id",
    "listrowtitle": "list_row_title",
    "answeredat": "answered_at",
    "durationms": "duration_ms",
    "recordingurl": "recording_url",
    "reason": "end_reason",
    "mode": "call_mode",
}

def _sms(channel: Channel) -> bool:  # delivery reports with error codes, segments, cost
    return channel.error_codes


def _calls(channel: Channel) -> bool:  # voice calls and WhatsApp calls
    return channel.has_calls


def _voice(channel: Channel) -> bool:  # a call's length, cause and keys pressed
    return channel.reports_keys


def _session_calls(channel: Channel) -> bool:  # WhatsApp calls
    return channel.has_calls and channel.events_name_session


def _no_channel(channel: Channel) -> bool:  # shown only when some row has the key
    return False


#: Report columns from details: (key, header, kind, width, the runs' channels that show
#: it, canonical keys).
DETAIL_COLUMNS: tuple[tuple[str, str, str, float, Callable[[Channel], bool],
                            tuple[str, ...]], ...] = (
    ("d:segments", "SMS segments", "int", 9, _sms, ("segments",)),
    ("d:encoding", "Encoding", "user_text", 9, _sms, ("encoding",)),
    ("d:cost", "Cost (R$)", "money", 10, _sms, ("cost_micro",)),
    ("d:error_code", "Error code", "user_text", 16, _sms, ("error_code",)),
    ("d:answered", "Answered", "text", 9, _calls, ("answered",)),
    ("d:talk", "Talk time (s)", "int", 9, _voice, ("talk_seconds",)),
    ("d:digits", "Digits", "user_text", 10, _voice, ("digits",)),
    ("d:cause", "Cause", "user_text", 18, _voice, ("cause", "cause_description")),
    ("d:call_id", "Call ID", "user_text", 20, _calls, ("call_id",)),
    # WhatsApp answers (tracking/answers.py): only when some row has one
    ("d:poll_vote", "Poll vote", "user_text", 20, _no_channel, ("poll_vote",)),
    ("d:list_choice", "List choice", "user_text", 24, _no_channel,
     ("list_row_id", "list_row_title")),
    ("d:duration", "Call length (s)", "seconds", 10, _session_calls, ("duration_ms",)),
    ("d:end_reason", "End reason", "user_text", 12, _session_calls, ("end_reason",)),
    ("d:recording", "Recording", "user_text", 40, _session_calls, ("recording_url",)),
)
OTHER_COLUMN = ("d:other", "Other details", "user_text", 30)
_TOTALS = ["run_id", "sender", "step", "segments", "cost", "talk_seconds", "digits"]
#: Chart labels besides error codes, causes and digits.
NO_CODE = "no error code"
NO_KEY = "no key pressed"
ANSWERED = "answered"
NOT_ANSWERED = "not answered"


def parse(raw: Any) -> dict[str, Any]:
    """The details JSON with canonical key names (unknown keys kept as they are)."""
    if not raw:
        return {}
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {"unparsed": str(raw)}
    if not isinstance(value, dict):
        return {"value": value}
    return {_KEYS.get(str(k).replace("_", "").lower(), str(k)): v for k, v in value.items()}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number else None


def cause(d: dict[str, Any]) -> str | None:
    """A call's Q.850 cause in words ("busy", "no answer", "voicemail"), else the service's
    description of it."""
    code = _number(d.get("cause"))
    description = _text(d.get("cause_description"))
    return cause_text(int(code) if code is not None else None, description)


def outcome(d: dict[str, Any]) -> str | None:
    """A finished call's outcome: "answered", else its cause in words, else "not answered"
    (None while nothing says how the call went)."""
    if d.get("answered") is True:
        return ANSWERED
    words = cause(d)
    if words:
        return words
    return NOT_ANSWERED if d.get("answered") is False else None


def cells(d: dict[str, Any]) -> dict[str, Any]:
    """The report's detail columns for one row (keys as in :data:`DETAIL_COLUMNS`)."""
    if not d:
        return {}
    out: dict[str, Any] = {}
    segments = _number(d.get("segments"))
    cost = _number(d.get("cost_micro"))
    talk = _number(d.get("talk_seconds"))
    answered = d.get("answered")
    out["d:segments"] = int(segments) if segments is not None else None
    out["d:encoding"] = _text(d.get("encoding"))
    out["d:cost"] = cost / 1_000_000 if cost is not None else None
    out["d:error_code"] = _text(d.get("error_code"))
    out["d:answered"] = ("yes" if answered is True else "no" if answered is False
                         else None)  # fmt: skip
    out["d:talk"] = int(talk) if talk is not None else None
    out["d:digits"] = _text(d.get("digits"))
    out["d:cause"] = cause(d)
    out["d:call_id"] = _text(d.get("call_id"))
    vote = d.get("poll_vote")
    out["d:poll_vote"] = ", ".join(map(str, vote)) if isinstance(vote, list) else _text(vote)
    title, row_id = _text(d.get("list_row_title")), _text(d.get("list_row_id"))
    out["d:list_choice"] = f"{title} ({row_id})" if title and row_id else (title or row_id)
    duration = _number(d.get("duration_ms"))
    out["d:duration"] = round(duration / 1000, 3) if duration is not None else None
    out["d:end_reason"] = _text(d.get("end_reason"))
    out["d:recording"] = _text(d.get("recording_url"))
    other = {k: v for k, v in d.items() if k not in _CANONICAL}
    out["d:other"] = json.dumps(other, ensure_ascii=False, default=str) if other else None
    return out


_CANONICAL = frozenset(_KEYS.values())


def _text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@dataclass
class DetailScan:
    """What one pass over the rows with details found: keys seen, totals by group, and the
    per-run counts the channel charts show (``(run_id, label) → rows``)."""

    keys: set[str] = field(default_factory=set)
    #: One row per (run_id, sender, step): segments, cost, talk_seconds, digits.
    totals: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=_TOTALS))
    #: Undelivered SMS by error code (rows without one are not counted here).
    error_codes: Counter[tuple[int, str]] = field(default_factory=Counter)
    #: Finished calls (answered / not answered) by outcome.
    outcomes: Counter[tuple[int, str]] = field(default_factory=Counter)
    #: Answered calls by the digits pressed (:data:`NO_KEY` when none).
    digits: Counter[tuple[int, str]] = field(default_factory=Counter)

    def columns(self, channels: Iterable[str]) -> list[tuple[str, str, str, float]]:
        """The detail columns a Recipients table needs: ``(key, header, kind, width)``."""
        present = [c for c in map(known_channel, set(channels)) if c is not None]
        out: list[tuple[str, str, str, float]] = [
            (key, header, kind, width)
            for key, header, kind, width, shows, needs in DETAIL_COLUMNS
            if any(map(shows, present)) or self.keys.intersection(needs)]  # fmt: skip
        if self.keys - _CANONICAL:
            out.append(OTHER_COLUMN)
        return out

    def add(self, run_id: int, state: str | None, d: dict[str, Any]) -> None:
        """Count one row with details in the charts' tallies."""
        if state == "undelivered" and d.get("error_code") not in (None, ""):
            self.error_codes[(run_id, str(d["error_code"]))] += 1
        elif state == "answered":
            self.outcomes[(run_id, ANSWERED)] += 1
            self.digits[(run_id, _text(d.get("digits")) or NO_KEY)] += 1
        elif state == "not_answered":
            self.outcomes[(run_id, outcome(d) or NOT_ANSWERED)] += 1


def scan(batches: Iterable[Sequence[Any]]) -> DetailScan:
    """Read ``(run_id, sender, step, state, details)`` rows once: keys seen, totals per
    group, and the counts of the channel charts."""
    result = DetailScan()
    sums: dict[tuple[int, str, int], list[float]] = {}
    for batch in batches:
        for run_id, sender, step, state, raw in batch:
            d = parse(raw)
            if not d:
                continue
            result.keys.update(d)
            result.add(run_id, state, d)
            acc = sums.setdefault((run_id, sender or "", step), [0.0, 0.0, 0.0, 0])
            acc[0] += _number(d.get("segments")) or 0.0
            acc[1] += (_number(d.get("cost_micro")) or 0.0) / 1_000_000
            acc[2] += _number(d.get("talk_seconds")) or 0.0
            acc[3] += 1 if d.get("digits") not in (None, "") else 0
    if sums:
        result.totals = pd.DataFrame(
            [(*key, *values) for key, values in sums.items()], columns=_TOTALS
        )
    return result
