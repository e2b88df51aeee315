"""A run's decisions on its steps that follow replies, for ``campaign status`` (read model).

Per conditional step: how many recipients it went to, how many it did not, how many still
wait for their decision, and the latest decisions with their reasons (``--json``).
"""

from __future__ import annotations

from typing import Any

from scheduler.core.time_words import iso_utc
from scheduler.ledger.access import Connection
from scheduler.ledger.outcome_reads import OutcomeReads
from scheduler.settings.conversation import ConversationOptions


def decisions_view(conn: Connection, run_id: int,
                   options: ConversationOptions | None) -> dict[str, Any] | None:
    """The run's decisions per conditional step, with a line each (None: no conditions)."""
    if options is None:
        return None
    reads = OutcomeReads(conn)
    counts = reads.decision_counts(run_id)
    steps = []
    for cond in options.conditions:
        went, not_sent = counts.get((cond.step, "go"), 0), counts.get((cond.step, "skip"), 0)
        waiting = counts.get((cond.step, "waiting"), 0)
        label = f"step {cond.step}" + (f" {cond.name!r}" if cond.name else "")
        line = (f"{label} when {cond.text}: went to {went:,}, not to {not_sent:,}"
                + (f", {waiting:,} waiting" if waiting else ""))
        steps.append({"step": cond.step, "name": cond.name, "when": cond.text, "went": went,
                      "not_sent": not_sent, "waiting": waiting, "line": line})
    latest = [{**d, "decided_at": iso_utc(d["decided_at"]), "late_at": iso_utc(d["late_at"])}
              for d in reads.latest_decisions(run_id, 20)]
    return {"steps": steps, "latest": latest}
