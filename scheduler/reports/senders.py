"""The Senders sheet: each sender of the report's runs with its state now (since when,
why, score, speed) and what it did in the run (sent, failed, unknown, opt-outs, replies),
then the state changes of those senders while each run lasted (from the senders'
history, shared by every run: who made each change, and why).

Read in the report's snapshot (:class:`scheduler.ledger.report_reads.SheetReads`); times
are local to each run's zone, as in the other sheets.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scheduler.ledger.report_reads import SheetReads
from scheduler.reports import layout
from scheduler.reports.columns import Column
from scheduler.reports.source import RunInfo, local_time

if TYPE_CHECKING:
    from scheduler.reports.workbook import WorkbookWriter

SHEET = "Senders"
SENDER_COLUMNS = [
    Column("run_id", "Run", "int", 6), Column("sender", "Sender", "user_text", 14),
    Column("state", "State now", "text", 12), Column("since", "Since", "date", 19),
    Column("reason", "Reason", "user_text", 30), Column("score", "Score", "number", 8),
    Column("throttle", "Speed (share of its rate)", "percent", 12),
    Column("sent", "Sent (this run)", "int", 9), Column("failed", "Failed", "int", 9),
    Column("unknown", "Unknown", "int", 9), Column("opt_outs", "Opt-outs", "int", 9),
    Column("replies", "Replies", "int", 9),
    Column("changes", "State changes in the run", "int", 10),
]  # fmt: skip
#: The state changes table, under the senders' table with its columns in the same places
#: (run, sender, the new state under the state, the time under "since", the reason under
#: the reason, the score under the score), so one set of widths suits both.
CHANGE_COLUMNS = [
    Column("run_id", "Run", "int", 6), Column("sender", "Sender", "user_text", 14),
    Column("to_state", "To", "text", 12), Column("at", "At", "date", 19),
    Column("reason", "Reason", "user_text", 30), Column("score", "Score", "number", 8),
    Column("from_state", "From", "text", 12), Column("source", "By", "text", 9),
]  # fmt: skip
#: Who made a change, as the sheet says it.
SOURCES = {"engine": "health rules", "operator": "a person", "event": "session status"}
NOT_YET = "no profile yet"


@dataclass
class SenderSheet:
    """The Senders sheet's two tables, as records keyed like the columns."""

    senders: list[dict[str, Any]]
    changes: list[dict[str, Any]]


def _run_senders(run: RunInfo, done: Collection[tuple[int, str]]) -> list[str]:
    named = run.definition.get("senders")
    listed = [str(s) for s in named] if isinstance(named, list) else []
    used = sorted(sender for run_id, sender in done if run_id == run.id)
    return list(dict.fromkeys([*listed, *used]))


def read_senders(reads: SheetReads, runs: Sequence[RunInfo]) -> SenderSheet:
    """Each run's senders and their state changes while the run lasted (from its start,
    or its creation before it started, to its end or now)."""
    done = reads.sender_counts([r.id for r in runs])
    names = {r.id: _run_senders(r, done) for r in runs}
    stored = reads.sender_profiles(sorted({s for each in names.values() for s in each}))
    sheet = SenderSheet([], [])
    for run in runs:
        start = run.started_at or run.created_at
        changes = reads.sender_changes(names[run.id], start, run.finished_at) \
            if start is not None else []
        for change in changes:
            sheet.changes.append({
                "run_id": run.id, "sender": change.sender, "to_state": change.to_state,
                "at": local_time(change.at, run.timezone), "reason": change.reason,
                "score": change.score, "from_state": change.from_state,
                "source": SOURCES.get(change.source, change.source)})
        for name in names[run.id]:
            counts = done[(run.id, name)]
            profile = stored.get(name)
            sheet.senders.append({
                "run_id": run.id, "sender": name,
                "state": profile.state if profile else NOT_YET,
                "since": local_time(profile.since, run.timezone) if profile else None,
                "reason": profile.reason if profile else None,
                "score": profile.score if profile else None,
                "throttle": profile.throttle if profile else None,
                **counts._asdict(),
                "changes": sum(1 for c in changes if c.sender == name)})
    return sheet


def _widths(sheet: SenderSheet) -> list[float]:
    widths = []
    for col in range(len(SENDER_COLUMNS)):
        parts = [(SENDER_COLUMNS[col], sheet.senders)]
        if col < len(CHANGE_COLUMNS):
            parts.append((CHANGE_COLUMNS[col], sheet.changes))
        widths.append(max(
            max(column.width, layout.width_for(
                [(r.get(column.key), column.kind) for r in records], column.header,
                cap=max(column.width, layout.STREAMED_MAX_WIDTH)))
            for column, records in parts))
    return widths


def write_senders(writer: WorkbookWriter, sheet: SenderSheet) -> int:
    """Add the Senders sheet; returns its senders' rows."""
    widths = _widths(sheet)
    ws = writer.new_sheet(SHEET, widths)
    row = writer.records(ws, 0, SENDER_COLUMNS, sheet.senders, widths)
    ws.freeze_panes(1, 0)
    ws.autofilter(0, 0, max(len(sheet.senders), 1), len(SENDER_COLUMNS) - 1)
    row += 1
    ws.write_string(row, 0, "State changes while the run lasted", writer.formats["section"])
    row += 1
    if not sheet.changes:
        ws.write_string(row, 0, "none: every sender kept its state", writer.formats["note"])
    else:
        writer.records(ws, row, CHANGE_COLUMNS, sheet.changes, widths)
    layout.page_setup(ws, widths)
    return len(sheet.senders)


__all__ = ["CHANGE_COLUMNS", "SENDER_COLUMNS", "SHEET", "SenderSheet", "read_senders",
           "write_senders"]
