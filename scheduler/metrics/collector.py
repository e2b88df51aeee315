"""One scrape of ``/metrics``: the ledger read in ONE snapshot, as metric families.

What is read, and why it stays cheap at a million rows: the runs by status (``runs``, a
row per run), every run's rows by channel and state and per sender (the trigger-kept
``run_tallies`` and ``run_sender_tallies``, never ``deliveries``), each unfinished run's
view (:func:`scheduler.views.reading.read_run`: the same bounded reads as ``campaign
status`` and the dashboard's run page; of a paused run only its counts, from its tallies:
it sends nothing, so its pace and stuck verdict would say nothing), the senders' profiles
(``sender_profiles``), the workers and their leases (PostgreSQL), finished runs'
durations (``runs``), and this process's webhook intake (:mod:`scheduler.tracking.intake_counts`).

Labels are bounded: ``channel``, ``state``, ``status`` and ``group`` are fixed sets;
``sender`` is a sender of the ledger (``sender_profiles``: the configured sessions and
``account``); ``worker`` a live worker; ``run`` only an unfinished run. Never a phone
number, a campaign's name or any other text from a campaign file.

prometheus-client is imported here: import this module only to answer ``/metrics``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector, CollectorRegistry

from scheduler.core.timeutil import Clock, monotonic, utcnow
from scheduler.ledger import access
from scheduler.ledger.overview_reads import OverviewReads, aware
from scheduler.ledger.run_reads import RunReads
from scheduler.ledger.sender_reads import SenderReads
from scheduler.ledger.states import RunStatus, SenderStatus
from scheduler.metrics.outbox import OutboxFigures, outbox_metrics, read_outbox
from scheduler.tracking import intake_counts as intake

if TYPE_CHECKING:
    from scheduler.ledger.runs import Ledger
    from scheduler.settings.load import Settings
    from scheduler.views.run_models import RunView

#: Upper bounds of the run duration buckets (seconds): 1 min to 3 days, then +Inf.
DURATION_BUCKETS = (60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 12 * 3600.0, 86400.0,
                    3 * 86400.0)


@dataclass
class RunFigures:
    """What ``/metrics`` shows of one unfinished run (from its view)."""

    run_id: int
    channel: str
    status: str
    counts: dict[str, int]
    pace: dict[str, float]
    stuck: bool
    started_at: datetime | None
    next_due: datetime | None


@dataclass
class LedgerFigures:
    """Everything one scrape shows of the ledger, read in one snapshot."""

    runs_by_status: dict[str, int] = field(default_factory=dict)
    deliveries: dict[tuple[str, str], int] = field(default_factory=dict)
    senders: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    runs: list[RunFigures] = field(default_factory=list)
    profiles: dict[str, tuple[str, float | None, float | None]] = field(default_factory=dict)
    workers: dict[str, int] | None = None
    durations: list[tuple[str, str, float]] = field(default_factory=list)
    outbox: OutboxFigures = field(default_factory=OutboxFigures)
    read_s: float = 0.0


def _run_figures(view: RunView, next_due: datetime | None) -> RunFigures:
    return RunFigures(run_id=view.run.id, channel=view.run.channel, status=view.run.status,
                      counts=dict(view.counts),
                      pace={p.sender: p.per_minute for p in view.pace},
                      stuck=view.stuck.stuck, started_at=view.run.started_at,
                      next_due=next_due)


def read_figures(ledger: Ledger, settings: Settings, now: datetime) -> LedgerFigures:
    """The ledger's figures as of ``now``, in one snapshot."""
    from scheduler.views.reading import read_run
    from scheduler.views.workers import read_workers

    started = monotonic()
    figures = LedgerFigures()
    with access.snapshot(ledger.engine, "read the metrics") as conn:
        every, run_reads = OverviewReads(conn), RunReads(conn)
        figures.runs_by_status = every.runs_by_status()
        figures.deliveries = every.deliveries_by_channel()
        figures.senders = every.sender_groups()
        for run in every.unfinished_runs():
            assert run.id is not None
            if run.status == RunStatus.PAUSED:  # sends nothing: its counts are enough
                figures.runs.append(RunFigures(
                    run_id=run.id, channel=run.channel, status=run.status,
                    counts=run_reads.tally(run.id).states(), pace={}, stuck=False,
                    started_at=aware(run.started_at), next_due=None))
                continue
            read = read_run(conn, run, settings, now)
            running = run.status == RunStatus.RUNNING and bool(read.view.counts.get("planned"))
            figures.runs.append(_run_figures(
                read.view, run_reads.next_due(run.id) if running else None))
        figures.profiles = {p.sender: (str(p.state), p.score, p.throttle)
                            for p in SenderReads(conn).profiles().values()}
        if conn.dialect.name != "sqlite":  # workers lease senders on PostgreSQL only
            view = read_workers(conn, settings.worker_lease_s, now)
            figures.workers = {w.id: len(w.senders) for w in view.workers}
        figures.durations = every.finished_durations()
        figures.outbox = read_outbox(conn, now)  # the outgoing webhooks' backlog
    figures.read_s = monotonic() - started
    return figures


def _gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=labels)


def ledger_metrics(figures: LedgerFigures, now: datetime) -> Iterator[Metric]:
    """The ledger's metric families (see docs/metrics.md)."""
    runs = _gauge("campaign_runs", "Runs in the ledger by status.", ["status"])
    for status in RunStatus:
        runs.add_metric([str(status)], figures.runs_by_status.get(str(status), 0))
    yield runs

    rows = _gauge("campaign_deliveries", "Deliveries (one per recipient and step) of every "
                  "run by channel and state, from the kept tallies.", ["channel", "state"])
    for (channel, state), n in sorted(figures.deliveries.items()):
        rows.add_metric([channel, state], n)
    yield rows

    by_sender = _gauge("campaign_sender_deliveries", "Deliveries of every run that went "
                       "through a sender, by channel, sender and status group (sent, failed, "
                       "unknown, other; replied: those with a reply).",
                       ["channel", "sender", "group"])
    for (channel, sender), counts in sorted(figures.senders.items()):
        for group, n in counts.items():
            by_sender.add_metric([channel, sender, group], n)
    yield by_sender

    yield from _run_metrics(figures.runs, now)
    yield from _sender_metrics(figures.profiles)

    if figures.workers is not None:
        leases = _gauge("campaign_worker_leases", "Senders leased by each live `campaign "
                        "serve` worker (PostgreSQL).", ["worker"])
        for worker, n in sorted(figures.workers.items()):
            leases.add_metric([worker], n)
        yield leases
        yield GaugeMetricFamily("campaign_workers_live", "Live `campaign serve` workers "
                                "(PostgreSQL).", value=len(figures.workers))

    yield _durations(figures.durations)
    yield from outbox_metrics(figures.outbox, now)
    yield GaugeMetricFamily("campaign_metrics_read_seconds", "How long this scrape took to "
                            "read the ledger.", value=round(figures.read_s, 6))


def _run_metrics(found: list[RunFigures], now: datetime) -> Iterator[Metric]:
    """The unfinished runs' own series (``run``: the run's id)."""
    rows = _gauge("campaign_run_deliveries", "Deliveries of each unfinished run by state "
                  "(campaign status --json's counts).", ["run", "channel", "state"])
    waiting = _gauge("campaign_run_due_rows", "Rows of each unfinished run still to send "
                     "(planned: due now or later).", ["run", "channel"])
    next_due = _gauge("campaign_run_next_due_timestamp_seconds", "When the next planned "
                      "row of a running run is due (Unix time; absent: none due, or the "
                      "run is not sending).", ["run"])
    pace = _gauge("campaign_run_pace_per_minute", "Sends of each unfinished run per "
                  "minute through each sender over the last 5 minutes.", ["run", "sender"])
    status = _gauge("campaign_run_status", "1 for each unfinished run's status.",
                    ["run", "channel", "status"])
    stuck = _gauge("campaign_run_stuck", "1 when an unfinished run looks stuck (no send for "
                   "longer than its pace explains, and no wait explains it).", ["run"])
    elapsed = _gauge("campaign_run_elapsed_seconds", "Seconds since each unfinished run "
                     "started (absent: not started).", ["run"])
    for run in found:
        key = str(run.run_id)
        for state, n in sorted(run.counts.items()):
            rows.add_metric([key, run.channel, state], n)
        waiting.add_metric([key, run.channel], run.counts.get("planned", 0))
        if run.next_due is not None:
            next_due.add_metric([key], run.next_due.timestamp())
        for sender, per_minute in sorted(run.pace.items()):
            pace.add_metric([key, sender], per_minute)
        status.add_metric([key, run.channel, run.status], 1)
        stuck.add_metric([key], 1 if run.stuck else 0)
        if run.started_at is not None:
            elapsed.add_metric([key], max((now - run.started_at).total_seconds(), 0.0))
    yield from (rows, waiting, next_due, pace, status, stuck, elapsed)


def _sender_metrics(profiles: dict[str, tuple[str, float | None, float | None]]
                    ) -> Iterator[Metric]:
    """Each sender's state (one series per known state, 1 for its own), score, throttle."""
    states = _gauge("campaign_sender_state", "1 for each sender's health state, 0 for the "
                    "others.", ["sender", "state"])
    score = _gauge("campaign_sender_score", "Each sender's health score (0-100; absent: not "
                   "scored yet).", ["sender"])
    throttle = _gauge("campaign_sender_throttle", "The share of its pace a sender may use "
                      "(1: full pace; absent: not throttled).", ["sender"])
    for sender, (state, points, share) in sorted(profiles.items()):
        for known in SenderStatus:
            states.add_metric([sender, str(known)], 1 if state == known else 0)
        if points is not None:
            score.add_metric([sender], points)
        if share is not None:
            throttle.add_metric([sender], share)
    yield from (states, score, throttle)


def _durations(found: list[tuple[str, str, float]]) -> Metric:
    """Finished runs' durations as a histogram by channel and status."""
    hist = HistogramMetricFamily("campaign_run_duration_seconds", "How long finished runs "
                                 "took, from their start to their end.",
                                 labels=["channel", "status"])
    groups: dict[tuple[str, str], list[float]] = {}
    for channel, status, seconds in found:
        groups.setdefault((channel, status), []).append(seconds)
    for (channel, status), values in sorted(groups.items()):
        buckets = [(_le(bound), sum(1 for v in values if v <= bound))
                   for bound in DURATION_BUCKETS]
        buckets.append(("+Inf", len(values)))
        hist.add_metric([channel, status], buckets, sum_value=sum(values))
    return hist


def _le(bound: float) -> str:
    return str(float(bound))


def intake_metrics(stats: intake.IntakeSnapshot) -> Iterator[Metric]:
    """This process's webhook intake: requests and their time (see :mod:`.intake`)."""
    requests = CounterMetricFamily("campaign_webhook_requests", "Webhook requests this "
                                   "process's receiver answered, by route and outcome.",
                                   labels=["route", "outcome"])
    for (route, outcome), n in sorted(stats.requests.items()):
        requests.add_metric([route, outcome], n)
    yield requests
    hist = HistogramMetricFamily("campaign_webhook_request_seconds", "How long the "
                                 "receiver took to answer a webhook request (stored and "
                                 "committed, or refused).", labels=["route"])
    for route, counts in sorted(stats.buckets.items()):
        running, buckets = 0, []
        for bound, n in zip((*map(_le, intake.BUCKETS), "+Inf"), counts, strict=True):
            running += n
            buckets.append((bound, running))
        hist.add_metric([route], buckets, sum_value=stats.seconds[route])
    yield hist


class LedgerCollector(Collector):
    """A collector that reads the ledger (and this process's intake) when collected."""

    def __init__(self, ledger: Ledger, settings: Settings, clock: Clock = utcnow) -> None:
        self.ledger, self.settings, self.clock = ledger, settings, clock

    def collect(self) -> Iterator[Metric]:
        now = self.clock()
        figures = read_figures(self.ledger, self.settings, now)
        yield from ledger_metrics(figures, now)
        yield from intake_metrics(intake.INTAKE.snapshot())


def exposition(ledger: Ledger, settings: Settings, clock: Clock = utcnow) -> bytes:
    """The text of one scrape (a fresh registry each time: nothing kept between scrapes)."""
    from prometheus_client import generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(LedgerCollector(ledger, settings, clock))
    return generate_latest(registry)
