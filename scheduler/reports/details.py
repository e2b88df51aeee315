"""Channel extras kept in ``deliveries.details`` (JSON): which columns they give, and totals.

The tracking package stores what SMS and voice events carry. Keys are matched without case
or underscores, so ``costMicroReais`` (as the service spells it) and ``cost_micro_reais``
both work:

- SMS: ``segments`` (int), ``costMicroReais`` (int, millionths of a real), ``errorCode``.
- Voice: ``answered`` (bool), ``talkSeconds`` (int), ``digits`` (keys pressed),
  ``cause`` (Q.850 code) and ``causeDescription``, ``callId``.

Any other key is kept in an "Other details" column as JSON. A report on an SMS or voice
run always has that channel's columns (empty until events arrive); on other channels a
column appears only when some row carries its key.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

#: Normalised key → canonical name.
_KEYS = {
    "segments": "segments",
    "smssegments": "segments",
    "costmicroreais": "cost_micro",
    "errorcode": "error_code",
    "answered": "answered",
    "talkseconds": "talk_seconds",
    "digits": "digits",
    "cause": "cause",
    "causedescription": "cause_description",
    "callid": "call_id",
}
#: Q.850 causes the service reports for calls, in words.
Q850 = {16: "answered, normal hang-up", 17: "busy", 18: "no response", 19: "no answer",
        21: "rejected", 27: "out of order", 34: "no circuit", 150: "ring time-out",
        151: "voicemail"}  # fmt: skip

#: Report columns from details: (key, header, kind, width, channel, canonical keys).
DETAIL_COLUMNS = (
    ("d:segments", "SMS segments", "int", 9, "sms", ("segments",)),
    ("d:cost", "Cost (R$)", "money", 10, "sms", ("cost_micro",)),
    ("d:error_code", "Error code", "user_text", 16, "sms", ("error_code",)),
    (
        "d:outcome",
        "Call outcome",
        "user_text",
        22,
        "voice",
        ("cause", "cause_description", "answered"),
    ),
    ("d:talk", "Talk time (s)", "int", 9, "voice", ("talk_seconds",)),
    ("d:digits", "Digits", "user_text", 10, "voice", ("digits",)),
    ("d:call_id", "Call ID", "user_text", 20, "voice", ("call_id",)),
)
OTHER_COLUMN = ("d:other", "Other details", "user_text", 30)
_TOTALS = ["run_id", "sender", "step", "segments", "cost", "talk_seconds", "digits"]


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


def outcome(d: dict[str, Any]) -> str | None:
    """A call's outcome in words: the service's description, else the cause, else answered."""
    if d.get("cause_description"):
        return str(d["cause_description"])
    cause = _number(d.get("cause"))
    if cause is not None:
        return Q850.get(int(cause), f"cause {int(cause)}")
    if d.get("answered") is True:
        return "answered"
    if d.get("answered") is False:
        return "not answered"
    return None


def cells(d: dict[str, Any]) -> dict[str, Any]:
    """The report's detail columns for one row (keys as in :data:`DETAIL_COLUMNS`)."""
    if not d:
        return {}
    out: dict[str, Any] = {}
    segments = _number(d.get("segments"))
    cost = _number(d.get("cost_micro"))
    talk = _number(d.get("talk_seconds"))
    out["d:segments"] = int(segments) if segments is not None else None
    out["d:cost"] = cost / 1_000_000 if cost is not None else None
    out["d:talk"] = int(talk) if talk is not None else None
    out["d:error_code"] = _text(d.get("error_code"))
    out["d:outcome"] = outcome(d)
    out["d:digits"] = _text(d.get("digits"))
    out["d:call_id"] = _text(d.get("call_id"))
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
    """What one pass over the rows with details found: keys seen, and totals by group."""

    keys: set[str] = field(default_factory=set)
    #: One row per (run_id, sender, step): segments, cost, talk_seconds, digits.
    totals: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=_TOTALS))

    def columns(self, channels: Iterable[str]) -> list[tuple[str, str, str, float]]:
        """The detail columns a Recipients table needs: ``(key, header, kind, width)``."""
        present = set(channels)
        out: list[tuple[str, str, str, float]] = [
            (key, header, kind, width)
            for key, header, kind, width, channel, needs in DETAIL_COLUMNS
            if channel in present or self.keys.intersection(needs)]  # fmt: skip
        if self.keys - _CANONICAL:
            out.append(OTHER_COLUMN)
        return out


def scan(batches: Iterable[Sequence[Any]]) -> DetailScan:
    """Read ``(run_id, sender, step, details)`` rows once: keys seen and totals per group."""
    result = DetailScan()
    sums: dict[tuple[int, str, int], list[float]] = {}
    for batch in batches:
        for run_id, sender, step, raw in batch:
            d = parse(raw)
            if not d:
                continue
            result.keys.update(d)
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
