"""docs/metrics.md lists every metric ``/metrics`` can show, with its type and labels, and
nothing it does not show (the families built from figures with one of everything)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from scheduler.metrics.collector import LedgerFigures, RunFigures, intake_metrics, ledger_metrics
from scheduler.metrics.outbox import OutboxFigures
from scheduler.tracking import intake_counts as intake

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
NOW = datetime(2026, 11, 23, 12, tzinfo=UTC)


def _documented() -> dict[str, tuple[str, frozenset[str]]]:
    """``{metric: (type, labels)}`` of the docs' table of every metric."""
    out = {}
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `campaign_"):
            name, kind, labels = (cell.strip() for cell in line.strip("|").split(" | ")[:3])
            out[name.strip("`")] = (kind, frozenset(re.findall(r"`(\w+)`", labels)))
    return out


def _figures() -> LedgerFigures:
    """Figures with one of everything, so that every family has samples."""
    run = RunFigures(run_id=7, channel="whatsapp", status="running",
                     counts={"planned": 3, "sent": 2}, pace={"s1": 1.5}, stuck=False,
                     started_at=NOW - timedelta(minutes=5), next_due=NOW)
    return LedgerFigures(
        runs_by_status={"running": 1, "completed": 1},
        deliveries={("whatsapp", "sent"): 4}, senders={
            ("whatsapp", "s1"): {"sent": 4, "failed": 0, "unknown": 0, "other": 0,
                                 "replied": 1}},
        runs=[run], profiles={"s1": ("healthy", 97.5, 1.0)}, workers={"w-1": 2},
        durations=[("whatsapp", "completed", 420.0)], read_s=0.01,
        outbox=OutboxFigures(not_given_out=1, waiting={"crm": (2, NOW - timedelta(minutes=3))},
                             states={("crm", "failing"): 2, ("crm", "delivered"): 5}))


def test_the_docs_list_every_metric_with_its_type_and_labels() -> None:
    stats = intake.IntakeStats()
    stats.observe("session", 200, 0.004)
    from prometheus_client import generate_latest
    from prometheus_client.registry import CollectorRegistry

    class Fixed:
        def collect(self):  # type: ignore[no-untyped-def]
            yield from ledger_metrics(_figures(), NOW)
            yield from intake_metrics(stats.snapshot())

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Fixed())  # type: ignore[arg-type]
    shown = {f.name: (f.type, frozenset(k for s in f.samples for k in s.labels) - {"le"})
             for f in text_string_to_metric_families(generate_latest(registry).decode())}
    assert all(f.samples for f in text_string_to_metric_families(
        generate_latest(registry).decode()))
    assert shown == _documented()
