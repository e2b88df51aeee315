"""The parts of a run's view made from what was read: pure functions (no database), so
each is tested with fixed values."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from scheduler.core import person_names
from scheduler.ledger import funnel as fn
from scheduler.ledger.run_rows import (
    ENDED,
    ErrorRow,
    EventRow,
    RecentSends,
    SmsFailureRow,
    Tally,
)
from scheduler.ledger.states import DeliveryState as S
from scheduler.views.channel_kinds import outcome_kind
from scheduler.views.channel_status import sms_failures_by
from scheduler.views.run_models import (
    CallFunnel,
    ErrorGroup,
    FunnelView,
    Progress,
    RecentEvent,
    SenderPace,
    SmsFunnel,
    StepFunnel,
    WorkerPace,
)
from scheduler.views.run_senders import RunSender

#: Longest text of an event or a reply shown on the page.
TEXT_AT_MOST = 200
#: Events and replies shown.
EVENTS_SHOWN = 20
#: CSV columns that hold a recipient's name, case-insensitively (the recent events show
#: the value of the first of the delivery's columns named so: operators know people by
#: name, not by number). Portuguese and English, as the campaigns' CSV files have them.
NAME_COLUMNS = person_names.NAME_COLUMNS


def planned_rate(rate_per_s: float, senders: Sequence[RunSender]) -> float:
    """Sends per second the plan expects: the rate of each sender that may send (not held;
    a throttled one at its share)."""
    return sum(rate_per_s * (s.throttle if s.throttle is not None else 1.0)
               for s in senders if not s.held)


def _step_funnel(step: int, tally: Tally) -> StepFunnel:
    counts = tally.funnel()
    return StepFunnel(step=step, planned=counts["planned"], sent=counts["sent"],
                      delivered=counts["delivered"], read=counts["read"],
                      replied=counts["replied"], failed=tally.count(frozenset({S.FAILED})))


def _sms(counts: Mapping[str, int], failures: Sequence[SmsFailureRow]) -> SmsFunnel:
    by_report, by_code = sms_failures_by((item.event, item.code, item.n) for item in failures)
    return SmsFunnel(
        delivered=counts.get(S.DELIVERED, 0) + counts.get(S.READ, 0),
        undelivered=counts.get(S.UNDELIVERED, 0),
        awaiting_report=counts.get(S.ACCEPTED, 0) + counts.get(S.SENT, 0),
        by_report=by_report, by_error_code=by_code, sampled=sum(item.n for item in failures))


def _calls(tally: Tally) -> CallFunnel:
    states = tally.states()
    open_states = frozenset({S.ACCEPTED, S.SENT, S.ANSWERED})
    in_progress = sum(n for _step, state, marks, _w, n in tally.rows
                      if state in open_states and not marks & ENDED)
    return CallFunnel(answered=states.get(S.ANSWERED, 0),
                      not_answered=states.get(S.NOT_ANSWERED, 0),
                      no_outcome_yet=states.get(S.ACCEPTED, 0) + states.get(S.SENT, 0),
                      in_progress=in_progress)


def funnel_view(channel: str, tally: Tally, funnel_counts: Mapping[str, int],
                tracking: Mapping[str, int],
                sms_failures: Sequence[SmsFailureRow] = ()) -> FunnelView:
    """The run's funnel (the report's definitions), per step, and the channel's own."""
    counts = {**funnel_counts, "opted_out": int(tracking.get("opted_out", 0)),
              "not_answered": tally.count(frozenset({S.NOT_ANSWERED}))}
    steps = sorted({step for step, *_rest in tally.rows})
    known = outcome_kind(channel)
    per_step = [_step_funnel(step, Tally(tuple(r for r in tally.rows if r[0] == step)))
                for step in steps] if len(steps) > 1 else []
    return FunnelView(
        channel=channel, counts=counts,
        rates={r.label: r.value for r in fn.rates(channel, counts)},
        line=fn.funnel_line(channel, counts), steps=per_step,
        sms=_sms(tally.states(), sms_failures) if known and known.reports else None,
        calls=_calls(tally) if known and known.calls else None)


def progress(funnel_counts: Mapping[str, int], counts: Mapping[str, int],
             recent: Mapping[str, RecentSends], window: timedelta, now: datetime, *,
             sending: bool) -> Progress:
    """Done of total, and (``sending``) when the rest goes at the last minutes' pace."""
    total = int(funnel_counts.get("planned", 0))
    remaining = counts.get(S.PLANNED, 0) + counts.get(S.DISPATCHING, 0)
    done = max(total - remaining, 0)
    per_s = sum(s.n for s in recent.values()) / window.total_seconds()
    eta = (now + timedelta(seconds=remaining / per_s)
           if sending and remaining and per_s > 0 else None)
    return Progress(total=total, done=done, remaining=remaining,
                    percent=round(100 * done / total, 1) if total else 0.0, eta=eta)


def pace(senders: Sequence[str], recent: Mapping[str, RecentSends],
         window: timedelta) -> list[SenderPace]:
    """Each sender's sends of the run in the last ``window``."""
    seconds = window.total_seconds()
    out = []
    for name in senders:
        got = recent.get(name, RecentSends(0, None))
        out.append(SenderPace(sender=name, recent=got.n, window_s=seconds,
                              per_minute=round(got.n * 60 / seconds, 2),
                              last_send_at=got.last_at))
    return out


def errors(rows: Sequence[ErrorRow]) -> list[ErrorGroup]:
    """Failed rows grouped by message, most first."""
    return [ErrorGroup(state=r.state, message=r.message or "no error message", n=r.n,
                       last_at=r.last_at) for r in rows]


def _short(text: str | None, limit: int = TEXT_AT_MOST) -> str | None:
    if text is None:
        return None
    return text if len(text) <= limit else text[:limit - 1] + "…"


def event_summary(payload: str | None, limit: int = TEXT_AT_MOST) -> str | None:
    """A few words of an event: its status, or its error code and message (cut at
    ``limit`` characters)."""
    try:
        body: Any = json.loads(payload) if payload else None
    except ValueError:
        return None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, dict):
        return None
    parts = [f"{key} {data[key]}" for key in ("status", "errorCode", "error", "reason")
             if isinstance(data.get(key), str | int) and data.get(key) != ""]
    return _short(" · ".join(parts), limit) if parts else None


def recipient(variables: str | None) -> str | None:
    """The recipient's name in a delivery's CSV values (``deliveries.variables``, JSON):
    the value of its first column named as one of :data:`NAME_COLUMNS` (any case); None
    when it has none, or the value is blank."""
    try:
        values: Any = json.loads(variables) if variables else None
    except ValueError:
        return None
    if not isinstance(values, dict):
        return None
    for column, value in values.items():
        if str(column).casefold() in NAME_COLUMNS:
            name = str(value).strip() if value is not None else ""
            return _short(name) if name else None
    return None


def events(found: Sequence[EventRow], replies: Sequence[EventRow]) -> list[RecentEvent]:
    """The run's newest events and replies together, newest first, each with its
    recipient's name (the CSV values parsed for the rows shown only)."""
    merged = [(RecentEvent(id=e.id, event=e.event, at=e.at, number=e.number,
                           text=event_summary(e.payload)), e.variables) for e in found]
    merged += [(RecentEvent(id=r.id, event=r.event, at=r.at, number=r.number,
                            text=_short(r.payload)), r.variables) for r in replies]
    merged.sort(key=lambda pair: (pair[0].at is not None, pair[0].at or datetime.min),
                reverse=True)
    shown = merged[:EVENTS_SHOWN]
    for event, variables in shown:
        event.recipient = recipient(variables)
    return [event for event, _variables in shown]


def workers(claimed: Mapping[str, int], recent: Mapping[str, RecentSends],
            live: Collection[str], window: timedelta) -> list[WorkerPace]:
    """What each worker sent of the run, and its rate over the last ``window``."""
    names = sorted(set(claimed) | set(recent))
    seconds = window.total_seconds()
    return [WorkerPace(worker=name, sent=claimed.get(name, 0),
                       per_s=round(recent[name].n / seconds, 2) if name in recent else None,
                       live=name in live) for name in names]
