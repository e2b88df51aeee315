"""The outgoing webhooks' backlog in ``/metrics``: deliveries waiting per subscription, the
oldest one's age, deliveries by state, and events not yet given out (docs/metrics.md).

Read in the scrape's snapshot (:func:`read_outbox`) from the outbox's two tables; the
``subscription`` label is a subscription's name (``config.toml``'s ``[[webhooks]]``, or
one removed from it whose rows remain): a bounded set, never a URL or a secret.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from prometheus_client.core import GaugeMetricFamily, Metric

from scheduler.ledger.access import Connection
from scheduler.ledger.overview_reads import OverviewReads

#: A delivery's states as the metrics name them.
STATES = ("pending", "failing", "delivered", "failed")


@dataclass
class OutboxFigures:
    """What one scrape shows of the outbox."""

    not_given_out: int = 0
    #: subscription → (deliveries waiting: pending or failing, the oldest one's event time)
    waiting: dict[str, tuple[int, datetime | None]] = field(default_factory=dict)
    #: (subscription, state) → deliveries
    states: dict[tuple[str, str], int] = field(default_factory=dict)


def read_outbox(conn: Connection, now: datetime) -> OutboxFigures:
    """The outbox's figures, read on ``conn`` (the scrape's snapshot)."""
    reads = OverviewReads(conn)
    not_given_out, waiting = reads.outbox_backlog()
    return OutboxFigures(not_given_out=not_given_out, waiting=waiting,
                         states=reads.outbox_counts(now))


def outbox_metrics(figures: OutboxFigures, now: datetime) -> Iterator[Metric]:
    """The outbox's metric families (see docs/metrics.md)."""
    backlog = GaugeMetricFamily(
        "campaign_webhook_outbox_backlog", "Outgoing webhook deliveries waiting (pending or "
        "failing: not yet delivered, nor failed past the horizon), per subscription.",
        labels=["subscription"])
    oldest = GaugeMetricFamily(
        "campaign_webhook_outbox_oldest_seconds", "Age of the oldest event a subscription "
        "still waits for; absent when none waits.", labels=["subscription"])
    subscriptions = sorted({sub for sub, _state in figures.states} | set(figures.waiting))
    for sub in subscriptions:
        n, first = figures.waiting.get(sub, (0, None))
        backlog.add_metric([sub], n)
        if n and first is not None:
            oldest.add_metric([sub], max(0.0, (now - first).total_seconds()))
    by_state = GaugeMetricFamily(
        "campaign_webhook_outbox_deliveries", "Outgoing webhook deliveries by subscription "
        "and state (the counts of `campaign webhooks --json`).",
        labels=["subscription", "state"])
    for sub in subscriptions:
        for state in STATES:
            by_state.add_metric([sub, state], figures.states.get((sub, state), 0))
    yield from (backlog, oldest, by_state)
    yield GaugeMetricFamily("campaign_webhook_outbox_not_given_out", "Outgoing webhook "
                            "events written but not yet given out to the subscriptions (no "
                            "worker with [[webhooks]] ran since).",
                            value=figures.not_given_out)
