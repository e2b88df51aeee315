"""The Attempts sheet (issue 25: retry rules, a fallback channel), and who was reached how.

- the funnel per attempt and channel of each run with second chances (a fallback run
  counts under its parent): per step, the 1st attempts, then each retry with the rule
  that made it (``no answer 250, busy 51``), its rows, sent, reached (answered calls,
  delivered SMS, delivered or read WhatsApp messages) with the rate over the sent, not
  reached, the outcomes tried again, what is still due and from when; then the fallback
  channel's line; what awaits a verdict;
- per recipient (the Recipients sheet's "Reached by" column, every row of the recipient's
  step): ``voice, attempt 2``, ``SMS fallback``, ``not reached``, or nothing while the
  row is not sent.

Numbers from :mod:`scheduler.ledger.attempt_funnel` (the status and dashboard's own), read
in the report's snapshot; written only when a run of the report has second chances.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scheduler.core.channel_terms import terms_of, title_of
from scheduler.ledger.attempt_funnel import (
    AttemptsView,
    label,
    reached_key,
    recycle_of,
    rules_text,
)
from scheduler.ledger.report_reads import ReportReads, reached
from scheduler.ledger.run_rows import DELIVERED, READ
from scheduler.reports import layout
from scheduler.reports.columns import Column
from scheduler.reports.source import RunInfo, local_time

if TYPE_CHECKING:
    from scheduler.reports.workbook import WorkbookWriter

SHEET = "Attempts"
COLUMNS = [
    Column("run_id", "Run", "int", 6), Column("step", "Step", "int", 6),
    Column("attempt", "Attempt", "text", 14), Column("channel", "Channel", "text", 10),
    Column("made_by", "Made by (rule: rows)", "text", 26),
    Column("rows", "Rows", "int", 9), Column("sent", "Sent", "int", 9),
    Column("reached", "Reached", "int", 9), Column("reached_as", "Reached means", "text", 10),
    Column("rate", "Reached (% of sent)", "percent", 10),
    Column("not_reached", "Not reached", "int", 9),
    Column("retried", "Tried again on", "text", 26),
    Column("due", "Still due", "int", 9), Column("next_due", "Next due", "date", 19),
]  # fmt: skip


@dataclass
class AttemptSheet:
    """The sheet's rows (keyed like :data:`COLUMNS`) and what awaits a verdict, per run."""

    rows: list[dict[str, Any]]
    awaiting: dict[int, int]
    #: The runs' time zone, when they share one (the Next due column's header says it).
    zone: str | None = None


def views_of(reads: ReportReads, runs: Sequence[RunInfo]) -> list[AttemptsView]:
    """The funnel per attempt of each family among ``runs`` (a run and its fallback run
    once), every awaiting row counted."""
    found = reads.runs([r.id for r in runs])
    out: dict[int, AttemptsView] = {}
    for run in runs:
        view = reads.sheets.attempts(found[run.id])
        if view is not None and view.run not in out:
            out[view.run] = view
    return list(out.values())


def read_sheet(reads: ReportReads, runs: Sequence[RunInfo]) -> AttemptSheet:
    """The Attempts sheet of ``runs`` (no rows: none has second chances)."""
    zones = {r.id: r.timezone for r in runs}
    sheet = AttemptSheet([], {}, next(iter(set(zones.values()))) if len(set(zones.values()))
                         == 1 else None)
    for view in views_of(reads, runs):
        zone = zones.get(view.run) or next(iter(zones.values()))
        sheet.awaiting[view.run] = view.awaiting
        for x in view.lines:
            sheet.rows.append({
                "run_id": view.run, "step": x.step + 1, "attempt": label(x),
                "channel": title_of(x.channel),
                "made_by": ("first attempt" if x.attempt == 1 and not x.fallback
                            else rules_text(x.made_by)),
                "rows": x.rows, "sent": x.sent, "reached": x.reached,
                "reached_as": x.reached_as, "rate": x.reached / x.sent if x.sent else None,
                "not_reached": x.not_reached, "retried": rules_text(x.retried) or None,
                "due": x.due, "next_due": local_time(x.next_due_at, zone)})
    return sheet


def write_sheet(writer: WorkbookWriter, sheet: AttemptSheet) -> int:
    """Add the Attempts sheet when a run has second chances; returns its rows."""
    if not sheet.rows:
        return 0
    due = f"Next due ({sheet.zone})" if sheet.zone else "Next due (the run's zone)"
    columns = [Column(c.key, due, c.kind, max(c.width, len(due) + 2.0))
               if c.key == "next_due" else c for c in COLUMNS]
    widths = [c.width for c in columns]
    ws = writer.new_sheet(SHEET, widths)
    row = writer.records(ws, 0, columns, sheet.rows, widths) + 1
    ws.freeze_panes(1, 0)
    for run_id, n in sheet.awaiting.items():
        ws.write_string(row, 0, f"Run {run_id}: {n:,} sent rows awaiting an outcome (tried "
                        "again, fall back, or final once it comes)", writer.formats["note"])
        row += 1
    ws.write_string(row, 0, "Reached by (Recipients sheet): the attempt and channel that "
                    "reached each recipient.", writer.formats["note"])
    layout.page_setup(ws, widths)
    return len(sheet.rows)


# ---------------------------------------------------------------------- reached by


class ReachedBy:
    """Who was reached how: each recipient's (and step's) last attempt, when they had
    more than one (attempt rows only: ``TableReads.chain_ends``), else their own row."""

    def __init__(self, reads: ReportReads, runs: Sequence[RunInfo]) -> None:
        found = reads.runs([r.id for r in runs])
        self.channels: dict[int, str] = {}
        self.reached: dict[int, str] = {}
        self.fallback_runs: set[int] = set()
        self.ends: dict[int, tuple[int, int, str, int]] = {}
        seen: set[int] = set()
        for run in runs:
            parent_id, fallback = reads.tables.family(run.id)
            if parent_id in seen:
                continue
            seen.add(parent_id)
            parent = found.get(parent_id) or reads.runs([parent_id])[parent_id]
            self.channels[parent_id] = parent.channel
            self.reached[parent_id] = reached_key(parent.channel, recycle_of(parent))
            ids = [parent_id]
            if fallback is not None:
                child = reads.runs([fallback])[fallback]
                self.channels[fallback] = child.channel
                self.reached[fallback] = terms_of(child.channel).reached
                self.fallback_runs.add(fallback)
                ids.append(fallback)
            self.ends.update(reads.tables.chain_ends(ids))
        self.shown = bool(self.ends) or any(recycle_of(found[parent]) is not None
                                            for parent in seen if parent in found)

    def _says(self, run_id: int, attempt: int, state: str, marks: int) -> str | None:
        channel = title_of(self.channels.get(run_id, "")) or "?"
        how = (f"{channel} fallback" if run_id in self.fallback_runs
               else f"{channel}, attempt {attempt}")
        if state == "skipped":
            return None
        got = reached(self.reached.get(run_id, "delivered"), state, marks)
        if got is None:  # not sent yet
            return f"not yet ({how} due)" if attempt > 1 else None
        return how if got else "not reached"

    def values(self, run_id: int, chunk: Mapping[str, Sequence[Any]]) -> list[str | None]:
        """The column's values for a chunk of run ``run_id``'s rows
        (``rq.delivery_chunks``'s)."""
        out: list[str | None] = []
        for row_id, first_id, attempt, state, delivered, read in zip(
                chunk["id"], chunk["first_id"], chunk["attempt"], chunk["state"],
                chunk["delivered_at"], chunk["read_at"], strict=True):
            chain = int(first_id) if first_id is not None else int(row_id)
            end = self.ends.get(chain)
            if end is not None:
                out.append(self._says(*end))
                continue
            marks = (DELIVERED if delivered is not None else 0) | (
                READ if read is not None else 0)
            out.append(self._says(run_id, int(attempt or 1), str(state), marks))
        return out


__all__ = ["COLUMNS", "SHEET", "AttemptSheet", "ReachedBy", "read_sheet",
           "views_of", "write_sheet"]
