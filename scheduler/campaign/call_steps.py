"""The WhatsApp call steps of a campaign: ``call_event`` (a scheduled call or event message)
and ``call`` (an outgoing call placed to each recipient, on the ``calls`` channel).

``call_event`` sends ``POST /api/v1/calls/send-event``; its step fields are that body's
fields and nothing else (``title``, ``scheduledTime``, ``callType``, ``createCallLink``,
``customCallLinkUrl``). Ours, checked at plan time: ``title`` and ``scheduledTime`` are
required (an event message without them tells the recipient nothing); ``scheduledTime`` is
a date and a time (``2026-12-01 15:00``, ISO 8601, a TOML date-time, or ``01/12/2026 15:00``),
read in the campaign's ``schedule.timezone`` unless it carries an offset, and sent as ISO 8601
with the offset (``2026-12-01T15:00:00-03:00``); ``callType`` is ``audio`` or ``video``; a
link is created or given (an http(s) URL), not both.

``call`` places a call through ``POST /api/v1/calls/place``, or ``/calls/stream`` when the
step says ``record = true`` (the answered call's recording URL is kept). Its body is
``{sessionId, to}`` (``record`` on ``stream``).
"""

from __future__ import annotations

import functools
from datetime import UTC, date, datetime, tzinfo
from typing import Any, ClassVar

from pydantic import create_model, field_validator

from scheduler.core.units import load_zone
from scheduler.service.call_models import (
    PLACE_PATH,
    SEND_EVENT_PATH,
    STREAM_PATH,
    PlaceCallBody,
    SendCallEventBody,
)
from scheduler.service.requests import NonEmpty

#: Step type names of the ``calls`` channel.
CALL_TYPES = ("call",)
#: What a templated time or link stands for when the step is checked before its rows.
SAMPLES = (("scheduledTime", "2000-01-01 00:00"), ("customCallLinkUrl", "https://example.com"))
_FORMATS = ("%d/%m/%Y %H:%M", "%d/%m/%Y %H:%M:%S")


def event_time(value: Any, zone: tzinfo) -> str:
    """``value`` (a string or a datetime) as ISO 8601 with its offset, read in ``zone`` when
    it has none; ``ValueError`` in words when it is not a date and a time."""
    moment: datetime | None = None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        raise ValueError(f"{value.isoformat()} has no time of day: write it as "
                         f"{value.isoformat()} 15:00")
    elif isinstance(value, str):
        text = value.strip()
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            for pattern in _FORMATS:
                try:
                    moment = datetime.strptime(text, pattern)
                    break
                except ValueError:
                    continue
        if moment is not None and len(text) <= 10 and ":" not in text:
            raise ValueError(f"has no time of day: write it as {text} 15:00")
    if moment is None:
        raise ValueError("not a date and time: write 2026-12-01 15:00, "
                         "2026-12-01T15:00:00-03:00 or 01/12/2026 15:00")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    return moment.isoformat()


class CallEventStepBody(SendCallEventBody):
    """A ``call_event`` step's body: the send-event body with ``title`` and
    ``scheduledTime`` required and the time read in the campaign's zone (:attr:`zone`)."""

    zone: ClassVar[tzinfo] = UTC
    title: NonEmpty
    scheduledTime: str

    @field_validator("scheduledTime", mode="before")
    @classmethod
    def _time(cls, value: Any) -> str:
        return event_time(value, cls.zone)


@functools.cache
def call_event_model(timezone: str) -> type[CallEventStepBody]:
    """The ``call_event`` body model of a campaign in ``timezone`` (one class per zone)."""
    try:
        zone = load_zone(timezone)
    except Exception:  # a wrong zone is the definition's error, reported there
        zone = UTC
    name = f"CallEventStepBody_{timezone.replace('/', '_')}"
    model = create_model(name, __base__=CallEventStepBody, __module__=__name__)
    model.zone = zone
    return model


class PlaceCallStepBody(PlaceCallBody):
    """A ``call`` step's body: ``record = true`` places it through ``/calls/stream``."""

    record: bool | None = None


def call_path(record: Any) -> str:
    """The endpoint of a ``call`` step: ``calls/stream`` when it records."""
    return STREAM_PATH if record is True else PLACE_PATH


__all__ = ["CALL_TYPES", "SAMPLES", "SEND_EVENT_PATH", "CallEventStepBody",
           "PlaceCallStepBody", "call_event_model", "call_path", "event_time"]
