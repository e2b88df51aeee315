"""What SMS and voice events tell beyond a state, folded into ``deliveries.details``.

The report (:mod:`scheduler.reports.details`) reads these keys, each channel's
``detail_keys`` (SMS ``segments`` and ``errorCode``; voice ``callId``, ``talkSeconds``,
``cause`` and ``causeDescription``) and, where its events report keys (voice),
``answered`` and ``digits``. They are recomputed from *every* stored event of the message (oldest
event time first), never updated piecemeal, so the result does not depend on the order the
events arrived in: the latest non-null value of a key wins, ``answered`` is true once any
event says so, and ``digits`` are the keys of the ``call.dtmf`` events in time order unless
an event reports the whole sequence. The fold is stored by
:func:`scheduler.ledger.queries.tracking.merge_details`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from scheduler.dispatch.channels import known_channel
from scheduler.tracking.intake import parse_stamp


def _order(envelope: dict[str, Any], event_id: int) -> tuple[float, int]:
    inner = envelope.get("data")
    data: dict[str, Any] = inner if isinstance(inner, dict) else {}
    moment = parse_stamp(data.get("timestamp")) or parse_stamp(envelope.get("timestamp"))
    return (moment.timestamp() if moment else 0.0, event_id)


def fold(stored: Iterable[tuple[int, str]]) -> dict[str, Any]:
    """The details of one message from its stored events ``(event id, payload)``."""
    envelopes = []
    for event_id, payload in stored:
        try:
            envelope = json.loads(payload)
        except ValueError:
            continue
        if isinstance(envelope, dict) and isinstance(envelope.get("data"), dict):
            envelopes.append((_order(envelope, event_id), envelope))
    envelopes.sort(key=lambda pair: pair[0])
    details: dict[str, Any] = {}
    pressed: list[str] = []
    whole: str | None = None
    answered: bool | None = None
    for _, envelope in envelopes:
        data, channel = envelope["data"], known_channel(envelope.get("channel"))
        for key in channel.detail_keys if channel is not None else ():
            if data.get(key) is not None:
                details[key] = data[key]
        if channel is None or not channel.reports_keys:
            continue
        name = envelope.get("event")
        if name in ("call.answered", "call.dtmf") or data.get("answered") is not None:
            said = True if name in ("call.answered", "call.dtmf") else bool(data["answered"])
            answered = bool(answered) or said
        if name == "call.dtmf" and data.get("digits"):
            pressed.append(str(data["digits"]))
        elif data.get("digits"):
            whole = str(data["digits"])
    if answered is not None:
        details["answered"] = answered
    if whole or pressed:
        details["digits"] = whole or "".join(pressed)
    return details
