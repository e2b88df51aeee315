"""Each channel's own outcomes of a run, as ``status``, ``runs`` and the progress bar say them.

WhatsApp has its funnel (sent, delivered, read, replied: ``scheduler.tracking``); an SMS
run is delivered or undelivered (told apart by the report: undelivered, failed, expired,
with the service's error codes), costs segments × the route's price; a voice run's calls
are answered or not (with the Q.850 cause in words), and an IVR flow's callers press
digits. :func:`channel_outcomes` reads them from the ledger (the counts are SQL in
:class:`scheduler.ledger.outcome_reads.OutcomeReads`); :func:`short_outcomes` says them from
the counts by state alone, cheap enough for every refresh of the progress bar.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pydantic import Field

from scheduler.core.lazy_model import LazyModel
from scheduler.ledger import access
from scheduler.ledger.access import Connection
from scheduler.ledger.states import DeliveryState as S
from scheduler.views.channel_kinds import has_outcomes, outcome_kind

if TYPE_CHECKING:  # the reads only (issue 32: the writers stay unloaded)
    from scheduler.ledger.core import LedgerCore
    from scheduler.ledger.outcome_reads import OutcomeReads

#: Digit sequences shown by ``status`` (the most frequent first).
TOP_DIGITS = 5
_REPORT = {"sms.undelivered": "undelivered", "sms.failed": "failed", "sms.expired": "expired"}


def sms_failures_by(failures: Iterable[tuple[str | None, str | None, int]]
                    ) -> tuple[dict[str, int], dict[str, int]]:
    """Undelivered SMS counted by report (``failed``, ``expired`` …) and by error code,
    most first, from ``(event, error code, n)`` groups (status and the dashboard)."""
    by_report: dict[str, int] = {}
    by_code: dict[str, int] = {}
    for event, code, n in failures:
        report = _REPORT.get(event or "", "no report stored")
        by_report[report] = by_report.get(report, 0) + n
        key = code or "no error code"
        by_code[key] = by_code.get(key, 0) + n
    return (dict(sorted(by_report.items(), key=lambda kv: (-kv[1], kv[0]))),
            dict(sorted(by_code.items(), key=lambda kv: (-kv[1], kv[0]))))


def money(micro: int) -> str:
    """Micro-reais as ``R$ 1,234.56``."""
    return f"R$ {micro / 1_000_000:,.2f}"


class SmsOutcomes(LazyModel):
    """An SMS run's outcomes so far."""

    channel: str = "sms"
    delivered: int = 0
    #: every message not delivered: the sum of the three reports below
    undelivered: int = 0
    by_report: dict[str, int] = Field(default_factory=dict)
    by_error_code: dict[str, int] = Field(default_factory=dict)
    #: taken by the service, no report yet
    awaiting_report: int = 0
    segments: int = 0
    cost_micro_reais: int = 0
    #: messages with no known cost (no price for their route and none in the answer)
    unpriced: int = 0
    recounted: int = 0

    def lines(self) -> list[str]:
        """What ``campaign status`` prints."""
        out = [f"SMS: delivered {self.delivered:,} · undelivered {self.undelivered:,}"
               f" · awaiting a report {self.awaiting_report:,}"]
        if self.by_report:
            out.append("  undelivered by report: " + ", ".join(
                f"{name} {n:,}" for name, n in self.by_report.items()))
        if self.by_error_code:
            out.append("  error codes: " + ", ".join(
                f"{code} {n:,}" for code, n in self.by_error_code.items()))
        cost = money(self.cost_micro_reais)
        out.append(f"  segments {self.segments:,} · cost so far {cost}"
                   + (f" (+ {self.unpriced:,} messages without a price)"
                      if self.unpriced else ""))
        out.append("    (a bulk's answer says no cost: its recipients are counted at the "
                   "settings' sms_price_micro)")
        if self.recounted:
            out.append(f"  {self.recounted:,} messages were counted in other segments by the "
                       "service than before sending (its count is kept)")
        return out


class VoiceOutcomes(LazyModel):
    """A voice run's outcomes so far."""

    channel: str = "voice"
    answered: int = 0
    not_answered: int = 0
    #: placed, neither answered nor ended yet (ringing, or not reported)
    no_outcome_yet: int = 0
    #: placed, no ``call.ended`` yet (answered calls still talking included)
    in_progress: int = 0
    pressed_digits: int = 0
    top_digits: dict[str, int] = Field(default_factory=dict)
    not_answered_causes: dict[str, int] = Field(default_factory=dict)
    talk_seconds: int = 0

    def lines(self) -> list[str]:
        """What ``campaign status`` prints."""
        out = [f"calls: answered {self.answered:,} · not answered {self.not_answered:,}"
               f" · no outcome yet {self.no_outcome_yet:,}"]
        if self.in_progress:
            out.append(f"  in progress (no call.ended yet) {self.in_progress:,}")
        if self.not_answered_causes:
            out.append("  not answered: " + ", ".join(
                f"{cause} {n:,}" for cause, n in self.not_answered_causes.items()))
        minutes = self.talk_seconds / 60
        digits = f"  digits pressed in {self.pressed_digits:,} calls"
        if self.top_digits:
            digits += " (top: " + ", ".join(
                f'"{value}" {n:,}' for value, n in self.top_digits.items()) + ")"
        out.append(digits)
        out.append(f"  talk time {minutes:,.1f} min")
        return out


class CallsOutcomes(LazyModel):
    """A WhatsApp calls run's outcomes so far (``channel = "calls"``)."""

    channel: str = "calls"
    answered: int = 0
    not_answered: int = 0
    #: placed, no terminal event yet (ringing, talking, or not reported)
    in_progress: int = 0
    #: answered calls with a known duration, and their total talk time
    timed: int = 0
    talk_seconds: float = 0.0
    recorded: int = 0

    def lines(self) -> list[str]:
        """What ``campaign status`` prints."""
        out = [f"WhatsApp calls: answered {self.answered:,} · not answered "
               f"{self.not_answered:,} · in progress {self.in_progress:,}"]
        if self.timed:
            average = self.talk_seconds / self.timed
            out.append(f"  talk time {self.talk_seconds / 60:,.1f} min "
                       f"(average {average:,.1f} s over {self.timed:,} calls)")
        out.append(f"  recordings {self.recorded:,}")
        return out


ChannelOutcomes = SmsOutcomes | VoiceOutcomes | CallsOutcomes


def _reads(conn: Connection) -> OutcomeReads:
    """The channel's outcome reads (imported for an SMS, voice or calls run alone: a
    WhatsApp run's status reads none; issue 32)."""
    from scheduler.ledger.outcome_reads import OutcomeReads

    return OutcomeReads(conn)


def _calls(conn: Connection, run_id: int, counts: dict[str, int]) -> CallsOutcomes:
    totals = _reads(conn).call_run_totals(run_id)
    return CallsOutcomes(
        answered=counts.get(S.ANSWERED, 0), not_answered=counts.get(S.NOT_ANSWERED, 0),
        in_progress=totals.open_calls, timed=totals.timed,
        talk_seconds=round(totals.duration_ms / 1000, 1), recorded=totals.recorded)


def _sms(conn: Connection, run_id: int, counts: dict[str, int]) -> SmsOutcomes:
    reads = _reads(conn)
    totals = reads.sms_totals(run_id)
    failures = reads.sms_failures(run_id)
    by_report, by_code = sms_failures_by(
        (item.event, item.code, item.n) for item in failures)
    return SmsOutcomes(
        delivered=counts.get(S.DELIVERED, 0) + counts.get(S.READ, 0),
        undelivered=counts.get(S.UNDELIVERED, 0),
        by_report=by_report, by_error_code=by_code,
        awaiting_report=counts.get(S.ACCEPTED, 0) + counts.get(S.SENT, 0),
        segments=totals.segments, cost_micro_reais=totals.cost_micro,
        unpriced=totals.messages - totals.priced, recounted=totals.recounted)


def _voice(conn: Connection, run_id: int, counts: dict[str, int]) -> VoiceOutcomes:
    from scheduler.service.account_models import cause_text  # its 50 wire models: voice only

    reads = _reads(conn)
    totals = reads.call_totals(run_id)
    digits = reads.top_digits(run_id, TOP_DIGITS)
    causes = reads.not_answered_causes(run_id)
    by_cause: dict[str, int] = {}
    for item in causes:
        text = cause_text(item.value, item.description) or "no cause given"
        by_cause[text] = by_cause.get(text, 0) + item.n
    return VoiceOutcomes(
        answered=counts.get(S.ANSWERED, 0), not_answered=counts.get(S.NOT_ANSWERED, 0),
        no_outcome_yet=counts.get(S.ACCEPTED, 0) + counts.get(S.SENT, 0),
        in_progress=totals.open_calls, pressed_digits=totals.with_digits,
        top_digits={str(item.value): item.n for item in digits},
        not_answered_causes=dict(sorted(by_cause.items(), key=lambda kv: (-kv[1], kv[0]))),
        talk_seconds=totals.talk_seconds)


def channel_outcomes(ledger: LedgerCore, run_id: int, channel: str,
                     counts: dict[str, int] | None = None) -> ChannelOutcomes | None:
    """The outcomes of an SMS, voice or calls run (None for WhatsApp: its funnel says
    them); ``counts``: the run's deliveries by state, when the caller has them."""
    if not has_outcomes(channel):
        return None
    counts = ledger.counts(run_id) if counts is None else counts
    with access.read(ledger.engine, f"count the {channel} outcomes of run {run_id}") as conn:
        return read_channel_outcomes(conn, run_id, channel, counts)


def read_channel_outcomes(conn: Connection, run_id: int, channel: str,
                          counts: dict[str, int]) -> ChannelOutcomes | None:
    """:func:`channel_outcomes` read on ``conn`` (a caller's snapshot). SMS segments and
    cost, and call totals, scan the run's sent rows (``campaign status`` only)."""
    known = outcome_kind(channel)
    if known is None:
        return None
    if known.reports:  # SMS: delivery reports, segments and cost
        return _sms(conn, run_id, counts)
    if known.keys:  # voice: causes, keys pressed, talk time
        return _voice(conn, run_id, counts)
    return _calls(conn, run_id, counts) if known.calls else None


def short_outcomes(channel: str, counts: dict[str, int],
                   tracking: dict[str, Any] | None = None) -> str:
    """A few words on how a run went, from its counts by state (``runs``, the bar)."""
    known = outcome_kind(channel)
    if known is not None and known.reports:
        return (f"{counts.get(S.DELIVERED, 0):,} delivered · "
                f"{counts.get(S.UNDELIVERED, 0):,} undelivered")
    if known is not None and known.calls:
        return (f"{counts.get(S.ANSWERED, 0):,} answered · "
                f"{counts.get(S.NOT_ANSWERED, 0):,} not answered")
    if tracking:
        return f"{tracking.get('delivered', 0):,} delivered · {tracking.get('read', 0):,} read"
    return "–"


def progress_extra(outcomes: ChannelOutcomes) -> str:
    """What the progress bar adds to the counts: SMS segments and cost so far; voice calls
    in progress and digits pressed."""
    if isinstance(outcomes, SmsOutcomes):
        return (f"{outcomes.segments:,} segments · {money(outcomes.cost_micro_reais)} "
                "so far")
    if isinstance(outcomes, CallsOutcomes):
        return f"{outcomes.in_progress:,} in progress · {outcomes.recorded:,} recorded"
    top = next(iter(outcomes.top_digits.items()), None)
    return (f"{outcomes.in_progress:,} in progress · digits in "
            f"{outcomes.pressed_digits:,} calls"
            + (f' (most: "{top[0]}" {top[1]:,})' if top else ""))
