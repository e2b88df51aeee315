"""What ``campaign plan`` says of an SMS or voice campaign: requests, segments, cost, pace.

The engine groups deliveries into bulk requests as it reads them: the dispatcher reads the
due rows of a run into a buffer of ``max(REFILL, 2 × batch)`` rows, refilled when empty, and
the head row of the buffer takes along the buffered rows of the same group
(:meth:`~scheduler.dispatch.channel.Channel.group_key`: an equal SMS text, route and sender;
equal call settings) up to the batch size (:mod:`scheduler.dispatch.picking`).
:class:`BulkTally` replays that over the plan's rows, step by step, so the number of
requests is the engine's, not an ideal grouping of the whole file: two recipients of the
same text 10,000 rows apart do not share a request. Memory: one buffer per step.

The SMS cost is the channel's own estimate (:meth:`SmsChannel.estimate`: segments × the
route's price per segment from the settings' ``sms_price_micro``), which is what the run
stores until the service's answer says the real cost.

Voice calls are paced by the campaign's rate and by the calls in progress: at most
``max_calls`` at once, each lasting ``call_seconds`` (ringing included: the settings'
``voice_call_estimate_s``, as a rehearsal assumes, or ``--call-seconds``), so calls start
at most ``max_calls / call_seconds`` per second.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scheduler.core.channel_terms import terms_of
from scheduler.dispatch.channel import Channel
from scheduler.dispatch.dispatcher.claims import REFILL
from scheduler.ledger.plan_rows import planned_delivery
from scheduler.ledger.rows import DueDelivery
from scheduler.views.channel_status import money

if TYPE_CHECKING:
    from scheduler.settings.run import RunOptions


@dataclass
class BulkTally:
    """Requests, segments and cost of a plan's rows, grouped as the engine groups them."""

    channel: Channel
    requests: Counter[str] = field(default_factory=Counter)
    segments_by_route: Counter[str] = field(default_factory=Counter)
    cost_micro: int = 0
    unpriced: int = 0
    largest: int = 0
    _buffers: dict[int, list[DueDelivery]] = field(default_factory=dict)

    @property
    def refill(self) -> int:
        """Rows per read of the dispatcher's buffer."""
        return max(REFILL, 2 * self.channel.batch_size)

    def feed(self, rows: list[dict[str, Any]]) -> None:
        """Take a chunk of plan rows (planned ones count; skipped ones are never sent)."""
        for row in rows:
            if row["state"] != "planned":
                continue
            buffer = self._buffers.setdefault(row["step"], [])
            buffer.append(planned_delivery(row["step"], row["to"], row["path"], row["payload"]))
            if len(buffer) >= self.refill:
                self._flush(buffer)

    def finish(self) -> BulkTally:
        """Count what is left in the buffers; returns itself."""
        for buffer in self._buffers.values():
            self._flush(buffer)
        return self

    @property
    def total(self) -> int:
        """Requests in all."""
        return sum(self.requests.values())

    def _flush(self, buffer: list[DueDelivery]) -> None:
        batch = self.channel.batch_size
        groups: dict[object, list[Any]] = {}  # key → [rows, the first row]
        for row in buffer:
            group = groups.setdefault(self.channel.group_key(row), [0, row])
            group[0] += 1
        estimate = getattr(self.channel, "estimate", None)
        for n, first in groups.values():
            full, rest = divmod(n, batch)
            for size in [batch] * full + ([rest] if rest else []):
                self.requests[self._path(first.path, size)] += 1
                self.largest = max(self.largest, size)
            if estimate is not None:  # SMS: the rows of a group share one text
                guess = estimate(first.payload)
                self.segments_by_route[_route(first.payload)] += guess["segments"] * n
                if "costMicroReais" in guess:
                    self.cost_micro += guess["costMicroReais"] * n
                else:
                    self.unpriced += n
        buffer.clear()

    def _path(self, path: str, size: int) -> str:
        return self.channel.request_path(path, size)


def _route(payload: str) -> str:
    import orjson

    from scheduler.dispatch.channels.sms import DEFAULT_ROUTE

    return str(orjson.loads(payload).get("route") or DEFAULT_ROUTE)


def call_interval(count: int, pace_s: float, max_calls: float, call_seconds: float,
                  bulk: int = 1) -> float:
    """Mean seconds between call starts of one sender placing ``count`` calls in bulks of
    ``bulk``, paced one call every ``pace_s``, with at most ``max_calls`` in progress, each
    ``call_seconds`` long.

    A bulk starts its calls together when the pace allows its first one (it spends one
    pace per call, as the engine's picking does), and no call starts before the call
    ``max_calls`` places earlier has ended. A small run is paced by its rate alone; a long
    one by ``max_calls / call_seconds`` calls a second.
    """
    if count <= 1 or max_calls < 1:
        return pace_s
    window = count if math.isinf(max_calls) else int(max_calls)
    size = max(1, bulk)
    starts: list[float] = []
    for i in range(count):
        at = (i - i % size) * pace_s
        if i >= window:
            at = max(at, starts[i - window] + call_seconds)
        starts.append(at)
    return starts[-1] / (count - 1)


def effective_counts(counts: list[int], deliveries: int, requests: int) -> list[int]:
    """Sends to time per sender: a bulk of ``n`` goes out at once and spends ``n`` of the
    sender's pace, so the last request starts ``n - 1`` sends before its last recipient's
    turn; ``n`` is the plan's mean bulk size."""
    if not requests:
        return counts
    mean = max(1, round(deliveries / requests))
    return [max(1, count - mean + 1) if count else 0 for count in counts]


def totals(channel: Channel, tally: BulkTally | None, *, recipients: int, deliveries: int,
           encodings: dict[str, int], prices: dict[str, int], call_seconds: float,
           call_seconds_source: str, max_calls_asked: int | None,
           account_calls: int) -> dict[str, Any]:
    """The ``channel_totals`` object of ``campaign plan --json``."""
    out: dict[str, Any] = {"channel": channel.name, "recipients": recipients,
                           "deliveries": deliveries}
    if tally is None:
        out["requests"] = {"total": deliveries}
        return out
    out["requests"] = {"total": tally.total, **dict(sorted(tally.requests.items()))}
    out["batch_size"] = channel.batch_size
    out["largest_request"] = tally.largest
    if channel.error_codes:  # SMS: priced by segment
        segments = sum(tally.segments_by_route.values())
        out[channel.name] = {
            "segments": segments,
            "segments_by_route": dict(sorted(tally.segments_by_route.items())),
            "encodings": dict(sorted(encodings.items())),
            "estimated_cost_micro_reais": tally.cost_micro,
            "unpriced_messages": tally.unpriced,
            "price_per_segment_micro_reais": dict(sorted(prices.items())),
            "price_source": "settings sms_price_micro (config.toml or "
                            "CAMPAIGN_SMS_PRICE_MICRO); an estimate: the service's "
                            "answers say the real cost",
        }
    if channel.has_calls and not channel.one_call_per_sender:  # voice: max_calls at once
        max_calls = int(getattr(channel, "max_calls", account_calls))
        out[channel.name] = {
            "max_calls": max_calls,
            "max_calls_asked": max_calls_asked,
            "account_max_calls": account_calls,
            "call_seconds_assumed": call_seconds,
            "call_seconds_source": call_seconds_source,
            "calls_per_minute_at_most": round(60 * max_calls / max(call_seconds, 1e-9), 2),
        }
    return out


def totals_lines(report: dict[str, Any]) -> list[str]:
    """The channel's totals for people, each line within 80 columns."""
    t = report.get("channel_totals")
    if not t:
        return []
    name = t["channel"]
    terms = terms_of(name)
    what = terms.unit
    lines = [f"Channel {name}: {t['recipients']:,} recipients, {t['deliveries']:,} {what}"]
    requests = t["requests"]
    if terms.step_endpoints:
        lines.append(f"  requests      {requests['total']:,} (one per message)")
        return lines
    paths = ", ".join(f"{n:,} to {path.removeprefix('/api/v1/')}"
                      for path, n in requests.items() if path != "total")
    lines.append(f"  requests      {requests['total']:,}: {paths or 'none'}")
    lines.append(f"                (up to {t['batch_size']:,} recipients each; the largest "
                 f"has {t['largest_request']:,})")
    sms = t.get(name) if terms.segments else None
    if sms:
        encodings = ", ".join(f"{k} {v:,}" for k, v in sms["encodings"].items())
        lines.append(f"  segments      {sms['segments']:,}"
                     + (f" (messages by encoding: {encodings})" if encodings else ""))
        prices = sms["price_per_segment_micro_reais"]
        routes = ", ".join(
            f"{n:,} × {money(prices[route])} ({route})" if route in prices
            else f"{n:,} ({route}: no price set)"
            for route, n in sms["segments_by_route"].items())
        lines.append(f"  cost (est.)   {money(sms['estimated_cost_micro_reais'])}"
                     + (f" = {routes}" if routes else ""))
        lines.append("                an estimate: the price per segment by route is the "
                     "settings'")
        lines.append("                sms_price_micro; the service's answers give the "
                     "real cost")
    voice = t.get(name) if terms.keys else None
    if voice:
        lines.append(f"  calls at once {voice['max_calls']:,} (campaign max_calls "
                     f"{voice['max_calls_asked'] or 'unset'}, account "
                     f"{voice['account_max_calls']:,})")
        lines.append(f"  call length   {voice['call_seconds_assumed']:g} s assumed, ringing "
                     "included")
        lines.append(f"                ({voice['call_seconds_source']}"
                     + ("; --call-seconds to change)" if voice["call_seconds_source"]
                        != "--call-seconds" else ")"))
        lines.append(f"                so at most {voice['calls_per_minute_at_most']:g} "
                     "calls start per minute")
    return lines


def pace(channel: Any, options: RunOptions, counts: list[int], deliveries: int,
         requests: int, call_s: float) -> tuple[float, tuple[float, float], str]:
    """The pace the finish is estimated at: (rate per second, jitter, what limits it).
    Calls in progress bound a calling channel's pace (:func:`call_interval`)."""
    from scheduler.dispatch.pacing import mean_interval

    rate, jitter = options.rate_per_s, options.jitter_s
    if not channel.has_calls:
        return rate, jitter, "pace"
    pace_s = mean_interval(rate, jitter)
    share = int(getattr(channel, "max_calls", 1)) / max(len(counts), 1)
    mean_bulk = round(deliveries / requests) if requests else 1
    most = max(counts, default=0)
    unlimited = call_interval(most, pace_s, math.inf, call_s, mean_bulk)
    interval = call_interval(most, pace_s, share, call_s, mean_bulk)
    limited_by = "calls in progress" if interval > unlimited * (1 + 1e-9) else "pace"
    return (1 / interval if interval > 0 else math.inf), (0.0, 0.0), limited_by
